import type { Socket } from 'node:net';
import { OwnerTally } from './owner-tally.js';

/**
 * Which connections a listener keeps: at most `max` open at once, and at most a quarter of them
 * from one address. Each costs memory before it has sent anything (an HTTP/2 session ~25 KiB),
 * and anyone who reaches the port may open them, key or not; without a bound, idle connections
 * alone could fill a replica's memory, and without the share, one client could take every slot.
 */
export class ConnectionGate {
  private readonly open = new OwnerTally();
  readonly perAddress: number;

  constructor(readonly max: number) {
    this.perAddress = Math.max(1, Math.floor(max / 4));
  }

  /** Whether `socket` may stay; one that may is counted until it closes. */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress ?? '';
    if (this.open.total >= this.max || this.open.of(address) >= this.perAddress) return false;
    this.open.add(address);
    socket.once('close', () => this.open.remove(address));
    return true;
  }
}
