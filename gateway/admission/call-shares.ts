import { TollgateError } from '../../common/errors.js';
import { OwnerTally } from '../http/owner-tally.js';
import { NO_COUNT, type ShareRefused } from './shares.js';

/** Gives back what was taken; safe to call more than once. */
export type Release = () => void;

export interface CallShareLimits {
  perAddress: number;
  perOwner: number;
}

/**
 * The calls in flight a replica holds for one client address and for one key owner, REST and
 * gRPC together (Kubernetes' API Priority and Fairness gives each flow its share the same way):
 * whatever one team holds (calls to a model of its own that never wakes or never answers, an
 * upstream that never answers, bodies never finished), the others' calls still find room. Past a
 * share the call is refused at once, 429 too_many_calls with Retry-After, before it spends
 * anything; `refused` counts it.
 */
export class CallShares {
  private readonly addresses = new OwnerTally();
  private readonly owners = new OwnerTally();

  constructor(
    private readonly limits: CallShareLimits,
    private readonly refused: ShareRefused = NO_COUNT,
  ) {}

  /** One call of a client address (an IPv4 address or an IPv6 /64: client-address.ts senderOf). */
  enterAddress(sender: string): Release {
    const limit = this.limits.perAddress;
    if (this.addresses.of(sender) >= limit) {
      this.refused('calls_per_address', '');
      throw new TollgateError(
        'too_many_calls',
        `your address has ${limit} calls in flight on this replica, its share (callsPerAddress); wait for some to be answered before sending more`,
        { headers: { 'retry-after': '1' } },
      );
    }
    return this.taken(this.addresses, sender);
  }

  /** One call of a key owner's, from its key check to its answer. */
  enterOwner(owner: string): Release {
    const limit = this.limits.perOwner;
    if (this.owners.of(owner) >= limit) {
      this.refused('calls_per_owner', owner);
      throw new TollgateError(
        'too_many_calls',
        `your keys have ${limit} calls in flight on this replica (REST and gRPC together), their owner's share (callsPerOwner); wait for some to be answered, and send each call's body as you open it`,
        { headers: { 'retry-after': '1' } },
      );
    }
    return this.taken(this.owners, owner);
  }

  private taken(tally: OwnerTally, who: string): Release {
    tally.add(who);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      tally.remove(who);
    };
  }
}
