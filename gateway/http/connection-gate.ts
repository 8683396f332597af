import type { Socket } from 'node:net';

/**
 * Which connections a listener keeps: at most `max` open at once, and at most a quarter of them
 * from one address. Each costs memory before it has sent anything (an HTTP/2 session ~25 KiB),
 * and anyone who reaches the port may open them, key or not; without a bound, idle connections
 * alone could fill a replica's memory, and without the share, one client could take every slot.
 */
export class ConnectionGate {
  private open = 0;
  private readonly byAddress = new Map<string, number>();
  readonly perAddress: number;

  constructor(readonly max: number) {
    this.perAddress = Math.max(1, Math.floor(max / 4));
  }

  /** Whether `socket` may stay; one that may is counted until it closes. */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? '';
    const mine = this.byAddress.get(address) ?? 0;
    if (this.open >= this.max || mine >= this.perAddress) return false;
    this.open++;
    this.byAddress.set(address, mine + 1);
    socket.once('close', () => {
      this.open--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
    });
    return true;
  }

  get size(): number {
    return this.open;
  }
}
