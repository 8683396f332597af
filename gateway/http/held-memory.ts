import { TollgateError } from '../../common/errors.js';
import { OwnerTally } from './owner-tally.js';

/** What a claim holds, for the advice its refusal gives. */
export interface HeldKind {
  /** What the caller should do instead, as the end of the owner's refusal. */
  advice: string;
}

/** What one call may hold at most, in body limits: its body, its answer, the answer re-encoded. */
const ONE_CALL = 3;

/**
 * Bytes that calls hold in this process at once and that the caller decides: V2 request bodies,
 * read whole to be checked; answers re-encoded with binary outputs; gRPC messages received and
 * not yet answered; gRPC answers sent and not yet read. Each is bounded per call by the body
 * limit, and none by how many calls a caller opens, so without one budget over all of them a
 * caller with any key could fill the replica's memory (and every team's calls with it). One
 * budget, not one per path: a replica's memory limit has to leave room for all of them together.
 * One owner's keys may hold a quarter of it (at least what one call may), so a single caller is
 * refused long before the replica is full.
 */
export class HeldMemory {
  private readonly tally = new OwnerTally();
  readonly perOwner: number;

  constructor(
    readonly limitBytes: number,
    bodyLimitBytes: number,
  ) {
    this.perOwner = Math.min(limitBytes, Math.max(Math.floor(limitBytes / 4), ONE_CALL * bodyLimitBytes));
  }

  /** Takes `bytes` for `owner`; the refusal that says why when they do not fit (nothing taken). */
  claim(owner: string, bytes: number, kind: HeldKind): TollgateError | undefined {
    const mine = this.tally.of(owner);
    if (mine + bytes > this.perOwner) {
      return new TollgateError(
        'rate_limited',
        `your keys' calls hold ${mine} bytes of this replica's memory (request bodies and gRPC messages not yet answered, gRPC answers not yet read) and this would take ${bytes} more, past the ${this.perOwner} one owner may hold; ${kind.advice}`,
        { headers: { 'retry-after': '1' } },
      );
    }
    if (this.tally.total + bytes > this.limitBytes) {
      return new TollgateError(
        'gateway_busy',
        `this replica's calls hold ${this.tally.total} bytes of its memory, near the ${this.limitBytes} it keeps for them; retry shortly`,
        { headers: { 'retry-after': '1' } },
      );
    }
    this.tally.add(owner, bytes);
    return undefined;
  }

  release(owner: string, bytes: number): void {
    if (bytes > 0) this.tally.remove(owner, bytes);
  }

  /** Held now, by `owner` or by all. */
  held(owner?: string): number {
    return owner === undefined ? this.tally.total : this.tally.of(owner);
  }

  /** What one call holds, taken as it comes and given back at once when the call is done. */
  hold(owner: string, kind: HeldKind): Hold {
    return new Hold(this, owner, kind);
  }
}

/**
 * One call's share: `reserve` takes what the call says it will hold (a declared Content-Length),
 * `take` what it holds beyond that as its bytes come; `release` gives it all back, once.
 */
export class Hold {
  private taken = 0;
  private seen = 0;
  private released = false;

  constructor(
    private readonly memory: HeldMemory,
    private readonly owner: string,
    private readonly kind: HeldKind,
  ) {}

  reserve(bytes: number): TollgateError | undefined {
    return this.claim(bytes - this.taken);
  }

  take(bytes: number): TollgateError | undefined {
    this.seen += bytes;
    return this.claim(this.seen - this.taken);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.memory.release(this.owner, this.taken);
    this.taken = 0;
  }

  private claim(more: number): TollgateError | undefined {
    // Nothing is counted once the call is done: what it read after that is its own to drop.
    if (more <= 0 || this.released) return undefined;
    const refused = this.memory.claim(this.owner, more, this.kind);
    if (refused === undefined) this.taken += more;
    return refused;
  }
}
