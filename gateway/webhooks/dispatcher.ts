import type { Redis } from 'ioredis';
import type { ApiKeyStore } from '../../common/apikey/store.js';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { EntrySealer } from '../../common/redis/sealed-entry.js';
import { apiKeyId, type ApiKey } from '../../common/resources/apikey.js';
import { DEFAULT_EXPIRING_DAYS, type Webhook } from '../../common/resources/webhook.js';
import type { Claimed, DeliveryQueue } from './deliveries.js';
import { OwnerTally } from '../http/owner-tally.js';
import { contentTypeOf, type WebhookEvent } from './events.js';
import type { WebhookInbox } from './inbox.js';
import type { WebhookSender } from './sender.js';
import { signedHeaders, webhookSecret } from './signature.js';
import type { WebhookStore } from './store.js';
import type { AdminRights } from './admin-rights.js';
import type { ShareRefused } from '../admission/shares.js';

export interface DispatcherOptions {
  /** Seconds before each retry of a failed delivery; its length is the number of retries. */
  retrySeconds: readonly number[];
  pollMs: number;
  expiringScanMs: number;
}

/** The gateway's webhook settings: the dispatcher's, and where and how endpoints may be reached. */
export interface WebhookSettings extends DispatcherOptions {
  /** Inward networks (loopback, private) endpoints may be in nonetheless. */
  allowedCidrs: readonly string[];
  /** The only hosts endpoints may name (`*.` for a domain's subdomains); empty: any public one. */
  allowedHosts: readonly string[];
  /** Endpoints may be http:// URLs (else https:// only). */
  allowHttp: boolean;
}

/** How long the endpoints' list is believed before it is read again (a new one hears within this). */
const ENDPOINTS_TTL_MS = 2_000;
/** Messages claimed per poll, and how long a claimed one waits before another replica may try it. */
const BATCH = 20;
const LEASE_MS = 60_000;
/**
 * Sends a replica has in flight, over all endpoints and to one: a slow endpoint (any user may
 * register one that never answers, and replay its messages at will) holds two of them, never the
 * queue; the others' messages go past it.
 */
const MAX_SENDING = 64;
const MAX_SENDING_PER_ENDPOINT = 2;
/**
 * And to one owner's endpoints, an eighth: a user may register ten endpoints, so without it a few
 * users whose endpoints never answer would hold every send of the replica. The last quarter of the
 * sends is kept for owners holding fewer than two: whoever fills the rest, a user with one
 * endpoint still gets its messages out.
 */
const MAX_SENDING_PER_OWNER = MAX_SENDING / 8;
const RESERVED_FOR_LIGHT = MAX_SENDING / 4;
/**
 * Claimed messages of an endpoint sending its share wait here for its next free send (a burst to
 * a healthy endpoint goes out at once, two at a time). Past this many they go back to the queue
 * due BUSY_RETRY_MS later; once half their lease has gone, due now.
 */
const MAX_WAITING_PER_ENDPOINT = 50;
const BUSY_RETRY_MS = 10_000;

/**
 * Sends key events to the endpoints that asked for them. Each event becomes one message per
 * endpoint, queued in Redis (deliveries.ts) and sent by whichever central gateway replica claims
 * it, signed the Standard Webhooks way, retried on the schedule, and kept visible when it fails
 * for good. Events come from the audit trail (management actions), from the rate limiter (a
 * limit breached, credits low or spent) and from a periodic look at keys about to expire.
 */
export class WebhookDispatcher {
  private endpoints: { at: number; list: Promise<Webhook[]> } | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private scanTimer: NodeJS.Timeout | undefined;
  private staleTimer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = false;
  /** Sends in flight, and how many to each endpoint. */
  private readonly sending = new Set<Promise<void>>();
  private readonly sendingTo = new OwnerTally();
  /** Sends in flight to each owner's endpoints. */
  private readonly sendingFor = new OwnerTally();
  private readonly waiting = new Map<string, Array<{ m: Claimed; claimedAt: number; owner: string }>>();

  constructor(
    private readonly s: {
      store: WebhookStore;
      queue: DeliveryQueue;
      sender: WebhookSender;
      inbox: WebhookInbox;
      sealer: EntrySealer;
      redis: Redis;
      keys: ApiKeyStore;
      /** Whose administrator right holds now: an allOwners endpoint hears everyone only while its creator's does. */
      admins: Pick<AdminRights, 'holding'>;
      /** Counts a send put off because its owner's endpoints held their share. */
      shareRefused: ShareRefused;
      log: Logger;
    },
    private readonly opts: DispatcherOptions,
  ) {}

  start(): void {
    this.pollTimer = setInterval(() => void this.poll(), this.opts.pollMs);
    this.pollTimer.unref();
    this.staleTimer = setInterval(() => void this.putBackStale(), LEASE_MS / 4);
    this.staleTimer.unref();
    this.scanTimer = setInterval(() => void this.scanExpiring(), this.opts.expiringScanMs);
    this.scanTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearInterval(this.scanTimer);
    clearInterval(this.staleTimer);
    await Promise.allSettled([...this.sending]);
    await this.s.sender.close();
  }

  /** A changed endpoint is heard at once by this replica (others within ENDPOINTS_TTL_MS). */
  forgetEndpoints(): void {
    this.endpoints = undefined;
  }

  /** Queues the event for every endpoint that asked for it; never throws (a failure is logged). */
  publish(event: WebhookEvent, nowMs = Date.now()): void {
    void this.enqueue(event, nowMs).catch((err: unknown) =>
      this.s.log.warn({ err, type: event.type }, 'webhook event not queued'),
    );
  }

  private async enqueue(event: WebhookEvent, nowMs: number, only?: Webhook, sendNow = true): Promise<void> {
    const targets = only === undefined ? await this.targetsOf(event) : [only];
    if (targets.length === 0) return;
    const body = JSON.stringify({
      type: event.type,
      timestamp: new Date(nowMs).toISOString(),
      data: event.data,
    });
    for (const w of targets) await this.s.queue.enqueue(w.metadata.name, event.type, body, nowMs);
    // Sent now rather than at the next tick: most deliveries succeed at once.
    if (sendNow) void this.poll();
  }

  /** The endpoints that hear an event: of its type, and its owner's or an allOwners one whose creator's right holds. */
  private async targetsOf(event: WebhookEvent): Promise<Webhook[]> {
    const asked = (await this.listEndpoints()).filter((w) => w.spec.events.includes(event.type));
    const everyone = await this.hearingEveryone(asked.filter((w) => w.spec.owner !== event.owner));
    return asked.filter((w) => w.spec.owner === event.owner || everyone.has(w.metadata.name));
  }

  /**
   * Of `endpoints`, the names of the allOwners ones whose creator is an administrator still
   * (admin-rights.ts): one registered by an administrator who has since lost the right hears
   * only its creator's events.
   */
  private async hearingEveryone(endpoints: readonly Webhook[]): Promise<Set<string>> {
    const all = endpoints.filter((w) => w.spec.allOwners === true);
    if (all.length === 0) return new Set();
    const holding = await this.s.admins.holding([...new Set(all.map((w) => w.spec.owner))]);
    return new Set(all.filter((w) => holding.has(w.spec.owner)).map((w) => w.metadata.name));
  }

  private listEndpoints(): Promise<Webhook[]> {
    const now = Date.now();
    if (this.endpoints === undefined || now - this.endpoints.at > ENDPOINTS_TTL_MS) {
      const list = this.s.store.list();
      list.catch(() => (this.endpoints = undefined));
      this.endpoints = { at: now, list };
    }
    return this.endpoints.list;
  }

  /**
   * Starts what is due: one attempt per claimed message, its outcome recorded as it ends (each
   * end polls again). An endpoint sending its share has its messages put back a little.
   */
  async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    try {
      // The data plane's events first (any central replica raised them): a message per endpoint.
      for (
        let events = await this.s.inbox.take(BATCH);
        events.length > 0;
        events = await this.s.inbox.take(BATCH)
      )
        for (const e of events) await this.enqueue(e, Date.now(), undefined, false);
      for (;;) {
        const room = MAX_SENDING - this.sending.size;
        if (room <= 0) return;
        // Before the claim: a lease is never thought younger than it is.
        const claimedAt = Date.now();
        const claimed = await this.s.queue.claim(claimedAt, LEASE_MS, Math.min(BATCH, room));
        if (claimed.length === 0) return;
        const owners = new Map((await this.listEndpoints()).map((w) => [w.metadata.name, w.spec.owner]));
        for (const m of claimed) {
          // An endpoint deleted meanwhile: its message fails at its attempt, in the shared share.
          const owner = owners.get(m.webhook) ?? '';
          const queued = this.waiting.get(m.webhook) ?? [];
          if (!this.hasShare(owner)) {
            // The owner's endpoints hold their share: the others' messages go past them.
            this.s.shareRefused('webhook_sends', owner);
            await this.s.queue.postpone(m.id, Date.now() + BUSY_RETRY_MS);
          } else if (this.sendingTo.of(m.webhook) < MAX_SENDING_PER_ENDPOINT) this.begin(m, owner);
          else if (queued.length < MAX_WAITING_PER_ENDPOINT) {
            queued.push({ m, claimedAt, owner });
            this.waiting.set(m.webhook, queued);
          } else {
            this.s.shareRefused('webhook_sends', owner);
            await this.s.queue.postpone(m.id, Date.now() + BUSY_RETRY_MS);
          }
        }
      }
    } catch (err) {
      this.s.log.warn({ err }, 'webhook deliveries not sent this time (Redis?)');
    } finally {
      this.polling = false;
    }
  }

  /** Whether the owner's endpoints may take one more send (MAX_SENDING_PER_OWNER, RESERVED_FOR_LIGHT). */
  private hasShare(owner: string): boolean {
    const held = this.sendingFor.of(owner);
    if (held >= MAX_SENDING_PER_OWNER) return false;
    return this.sending.size < MAX_SENDING - RESERVED_FOR_LIGHT || held < 2;
  }

  /**
   * One attempt at one message, its endpoint's slot taken at once (before any await: no other
   * start sees the slot free meanwhile); never throws.
   */
  private begin(m: Claimed, owner: string): void {
    const to = m.webhook;
    this.sendingTo.add(to);
    this.sendingFor.add(owner);
    const sent = this.attempt(m)
      .catch((err: unknown) =>
        this.s.log.warn({ err, message: m.id }, 'webhook delivery not recorded (Redis?)'),
      )
      .finally(() => {
        this.sending.delete(sent);
        this.sendingTo.remove(to);
        this.sendingFor.remove(owner);
        void this.next(to).then(() => this.poll());
      });
    this.sending.add(sent);
  }

  /**
   * Starts the next message waiting for `to` whose claim is still fresh (held at most half its
   * lease), in the same turn (no other start slips in); older ones go back to the queue due now,
   * while their lease is still this replica's.
   */
  private async next(to: string): Promise<void> {
    const queued = this.waiting.get(to) ?? [];
    const stale: Claimed[] = [];
    let head = queued.shift();
    while (head !== undefined && Date.now() - head.claimedAt >= LEASE_MS / 2) {
      stale.push(head.m);
      head = queued.shift();
    }
    if (head !== undefined && !this.stopped) this.begin(head.m, head.owner);
    if (queued.length === 0 && this.waiting.get(to) === queued) this.waiting.delete(to);
    try {
      for (const m of stale) await this.s.queue.postpone(m.id, Date.now());
    } catch (err) {
      this.s.log.warn({ err }, 'webhook deliveries not put back this time (Redis?)');
    }
  }

  /** Every waiting message held half its lease goes back to the queue, due now (within its lease). */
  private async putBackStale(): Promise<void> {
    const now = Date.now();
    try {
      for (const [to, queued] of this.waiting) {
        // Taken out of the same list next() reads, so no message is both put back and sent.
        const stale: Claimed[] = [];
        for (let i = queued.length - 1; i >= 0; i--)
          if (now - (queued[i]?.claimedAt ?? now) >= LEASE_MS / 2)
            stale.push(...queued.splice(i, 1).map((w) => w.m));
        if (queued.length === 0) this.waiting.delete(to);
        for (const m of stale) await this.s.queue.postpone(m.id, now);
      }
    } catch (err) {
      this.s.log.warn({ err }, 'webhook deliveries not put back this time (Redis?)');
    }
  }

  private async attempt(m: Claimed): Promise<void> {
    const attempts = m.attempts + 1;
    const endpoint = (await this.listEndpoints()).find((w) => w.metadata.name === m.webhook);
    if (endpoint === undefined) {
      await this.s.queue.record(m.id, { ok: false, error: 'the endpoint was deleted' }, attempts, undefined);
      return;
    }
    const nowS = Math.floor(Date.now() / 1000);
    const secret = webhookSecret(this.s.sealer, endpoint);
    const outcome = await this.s.sender.send(
      endpoint.spec.url,
      { ...signedHeaders(secret, m.id, nowS, m.body), 'content-type': contentTypeOf(m.type) },
      m.body,
    );
    const delay = this.opts.retrySeconds[attempts - 1];
    const retryAt = outcome.ok || delay === undefined ? undefined : Date.now() + delay * 1000;
    await this.s.queue.record(m.id, outcome, attempts, retryAt);
    if (!outcome.ok)
      this.s.log.info(
        { webhook: m.webhook, message: m.id, attempts, error: outcome.error, retryAt },
        retryAt === undefined ? 'webhook delivery failed for good' : 'webhook delivery failed; will retry',
      );
  }

  /**
   * key.expiring: each endpoint that asked hears once of each of its keys (its owner's, or every
   * user's) that expires within its expiringDays. Every replica looks; the first to mark a key
   * announced (SET NX) announces it.
   */
  async scanExpiring(nowMs = Date.now()): Promise<void> {
    try {
      const endpoints = (await this.listEndpoints()).filter((w) => w.spec.events.includes('key.expiring'));
      if (endpoints.length === 0) return;
      const horizonOf = (w: Webhook) => nowMs + (w.spec.expiringDays ?? DEFAULT_EXPIRING_DAYS) * 86_400_000;
      // One pass over the keys (the store's watched copy on a cluster), reading whole only those
      // that expire within the farthest horizon asked.
      const keys = await this.s.keys.expiringBetween(nowMs, Math.max(...endpoints.map(horizonOf)));
      const everyone = await this.hearingEveryone(endpoints);
      for (const w of endpoints) {
        const horizon = horizonOf(w);
        for (const key of keys) {
          const { expiresAt, owner } = key.spec;
          if (expiresAt === undefined) continue;
          if (owner !== w.spec.owner && !everyone.has(w.metadata.name)) continue;
          const at = Date.parse(expiresAt);
          if (at <= nowMs || at > horizon) continue;
          const once = redisKeys.webhookOnce(`expiring:${w.metadata.name}:${apiKeyId(key)}:${at}`);
          const first = await this.s.redis.set(once, '1', 'PX', at - nowMs + 86_400_000, 'NX');
          if (first !== 'OK') continue;
          await this.enqueue(expiringEvent(key, nowMs), nowMs, w);
        }
      }
    } catch (err) {
      this.s.log.warn({ err }, 'keys not checked for a coming expiry this time');
    }
  }
}

function expiringEvent(key: ApiKey, nowMs: number): WebhookEvent {
  const { owner, name, start, identity, expiresAt } = key.spec;
  return {
    type: 'key.expiring',
    owner,
    data: {
      keyId: apiKeyId(key),
      ...(name === undefined ? {} : { keyName: name }),
      keyStart: start,
      ...(identity === undefined ? {} : { identity }),
      owner,
      detail: {
        expiresAt: expiresAt ?? '',
        inDays: Math.round(((Date.parse(expiresAt ?? '') - nowMs) / 86_400_000) * 10) / 10,
      },
    },
  };
}
