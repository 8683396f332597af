/** How many of something each owner holds right now; an owner holding none takes no memory. */
export class OwnerTally {
  private readonly held = new Map<string, number>();

  of(owner: string): number {
    return this.held.get(owner) ?? 0;
  }

  add(owner: string): void {
    this.held.set(owner, this.of(owner) + 1);
  }

  remove(owner: string): void {
    const left = this.of(owner) - 1;
    if (left > 0) this.held.set(owner, left);
    else this.held.delete(owner);
  }
}
