import type { Socket } from 'node:net';
import { senderOf } from './client-address.js';

export interface ConnectionGateOptions {
  /** Connections open at once, in all. */
  max: number;
  /**
   * Connections one sender keeps open between calls (HTTP's keep-alive); past it each answer
   * closes its connection. Unset: no bound (gRPC, whose connections multiplex their calls).
   */
  keepAlivePerSender?: number;
  /**
   * Whether busy() and done() are told of each call, so idle connections are known and one may be
   * closed for a newcomer when the port is full. Without it the port refuses newcomers when full.
   */
  tracksCalls?: boolean;
  /** Peers without a share of their own: trusted proxies, which carry everyone's connections. */
  unshared?: (address: string) => boolean;
  /** Told of each connection turned away: the port is full, or its sender's share is. */
  refused?: (why: 'full' | 'share') => void;
}

interface Sender {
  open: number;
  /** Its connections with no call in flight (none begun yet included), oldest first. */
  idle: Set<Socket>;
}

interface Held {
  sender: string;
  calls: number;
  counted: boolean;
}

/**
 * Which connections a listener keeps: at most `max` open at once, and at most a quarter of them
 * from one sender (an address; an IPv6 /64 as one, since a host commonly has a whole /64). Each
 * costs memory before it has sent anything, and anyone who reaches the port may open them, key or
 * not: without the bound idle connections alone could fill a replica's memory, and without the
 * share one client could take every slot.
 *
 * When the port is full, a newcomer holding fewer than the largest sender takes the place of that
 * sender's oldest idle connection (as Envoy's overload manager closes idle connections first): a
 * few senders with idle connections cannot keep everyone else out by filling the port between
 * them. Busy connections are never cut for a newcomer.
 */
export class ConnectionGate {
  private readonly senders = new Map<string, Sender>();
  private readonly held = new WeakMap<Socket, Held>();
  private total = 0;
  readonly perSender: number;

  constructor(private readonly opts: ConnectionGateOptions) {
    this.perSender = Math.max(1, Math.floor(opts.max / 4));
  }

  /** Whether `socket` may stay; one that may is counted until it closes. */
  admit(socket: Socket): boolean {
    const address = socket.remoteAddress;
    // The connection is gone already: nobody to serve.
    if (address === undefined) return false;
    const unshared = this.opts.unshared?.(address) === true;
    const sender = unshared ? `proxy ${address}` : senderOf(address);
    const mine = this.senders.get(sender)?.open ?? 0;
    if (!unshared && mine >= this.perSender) {
      this.opts.refused?.('share');
      return false;
    }
    // A trusted proxy comes as a newcomer with nothing: it may take an idle place of whoever holds
    // the most, as any newcomer may (its own count is everyone's connections).
    if (
      this.total >= this.opts.max &&
      !(this.opts.tracksCalls === true && this.makeRoom(sender, unshared ? 0 : mine))
    ) {
      this.opts.refused?.('full');
      return false;
    }
    let entry = this.senders.get(sender);
    if (entry === undefined) {
      entry = { open: 0, idle: new Set() };
      this.senders.set(sender, entry);
    }
    entry.open++;
    entry.idle.add(socket);
    this.total++;
    const held: Held = { sender, calls: 0, counted: true };
    this.held.set(socket, held);
    socket.once('close', () => this.forget(socket, held));
    return true;
  }

  /** A call began on the connection: it is not idle until its calls end. */
  busy(socket: Socket): void {
    const held = this.held.get(socket);
    if (held === undefined) return;
    held.calls++;
    this.senders.get(held.sender)?.idle.delete(socket);
  }

  /** A call on the connection ended. */
  done(socket: Socket): void {
    const held = this.held.get(socket);
    if (held === undefined || !held.counted) return;
    held.calls = Math.max(0, held.calls - 1);
    if (held.calls === 0 && !socket.destroyed) this.senders.get(held.sender)?.idle.add(socket);
  }

  /**
   * Whether the connection may stay open after the answer of a call beginning now: its sender holds
   * no more connections than its keep-alive share (trusted proxies have no bound). Decided as the
   * call begins, so the answer says it (`Connection: close`) and no client has a connection closed
   * under its next request; past the share, each answer closes its connection until the sender
   * holds its share or fewer.
   */
  keepAlive(socket: Socket): boolean {
    const bound = this.opts.keepAlivePerSender;
    const held = this.held.get(socket);
    if (bound === undefined || held === undefined || held.sender.startsWith('proxy ')) return true;
    return (this.senders.get(held.sender)?.open ?? 0) <= bound;
  }

  /**
   * Closes the oldest idle connection of the sender holding the most, if it holds more than the
   * newcomer would; whether there is room now.
   */
  private makeRoom(newcomer: string, mine: number): boolean {
    let victim: Sender | undefined;
    for (const [name, sender] of this.senders) {
      if (name === newcomer || sender.idle.size === 0 || sender.open <= mine + 1) continue;
      if (victim === undefined || sender.open > victim.open) victim = sender;
    }
    const oldest = victim?.idle.values().next().value;
    if (oldest === undefined) return false;
    const held = this.held.get(oldest);
    // Counted out now: its 'close' comes later, and the newcomer takes its place at once.
    if (held !== undefined) this.forget(oldest, held);
    oldest.destroy();
    return true;
  }

  private forget(socket: Socket, held: Held): void {
    if (!held.counted) return;
    held.counted = false;
    this.total--;
    const sender = this.senders.get(held.sender);
    if (sender === undefined) return;
    sender.idle.delete(socket);
    if (--sender.open === 0) this.senders.delete(held.sender);
  }
}
