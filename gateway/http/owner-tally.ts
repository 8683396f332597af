/** How much of something each owner holds right now, and all of them together; an owner holding none takes no memory. */
export class OwnerTally {
  private readonly held = new Map<string, number>();
  private sum = 0;

  of(owner: string): number {
    return this.held.get(owner) ?? 0;
  }

  get total(): number {
    return this.sum;
  }

  add(owner: string, amount = 1): void {
    this.held.set(owner, this.of(owner) + amount);
    this.sum += amount;
  }

  remove(owner: string, amount = 1): void {
    const left = this.of(owner) - amount;
    if (left > 0) this.held.set(owner, left);
    else this.held.delete(owner);
    this.sum -= amount;
  }
}
