import { createHash, randomBytes } from 'node:crypto';
import type { CallHead } from '../http/call-head.js';
import type { Redis } from 'ioredis';
import { growingLru } from '../../common/growing-lru.js';
import { z } from 'zod';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { clientAddress, type ProxyTrust } from '../http/client-address.js';
import {
  boundReports,
  hashReportLine,
  presentedKeyHash,
  sendReport,
  takeReports,
} from './sidecar-reports.js';
import type { SegmentStore } from '../segments/segment-store.js';
import { PeriodicFlush } from '../periodic-flush.js';
import { execAll } from '../../common/redis/transaction.js';

export const AUDIT_ACTIONS = [
  'key.created',
  'key.rolled',
  'key.deleted',
  'key.expired',
  'key.refused',
  'key.limits_changed',
  'key.leaked',
  'key.credits_added',
  'identity.created',
  'identity.deleted',
  'identity.limits_changed',
  'identity.credits_added',
  'webhook.created',
  'webhook.deleted',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One line of a segment: what happened to which key, who did it, when, from where. Never a key. */
export const auditEventSchema = z.object({
  id: z.string(),
  at: z.string().refine((at) => !Number.isNaN(Date.parse(at)), 'not a date-time'),
  action: z.enum(AUDIT_ACTIONS),
  /** The key's id; absent for an identity's own events. */
  keyId: z.string().optional(),
  /** The identity the event is about (identity.*), or the identity of the key it is about. */
  identity: z.string().optional(),
  /** The key's name and first characters when it happened, so a reader knows which key it was. */
  keyName: z.string().optional(),
  keyStart: z.string().optional(),
  /** Whose key it is: the user who may read the event. */
  owner: z.string(),
  /** The token's subject for management actions; `key:<id>` for a use of the key. */
  actor: z.string(),
  address: z.string().optional(),
  detail: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
});
export type AuditEvent = z.infer<typeof auditEventSchema>;

export interface AuditRecord {
  action: AuditAction;
  keyId?: string;
  identity?: string | undefined;
  /** How a reader recognises the key: its name and its first characters (never the key). */
  key?: { name?: string | undefined; start?: string | undefined };
  owner: string;
  actor: string;
  req?: CallHead;
  detail?: Record<string, string | number>;
}

export interface AuditQuery {
  keyId?: string;
  identity?: string;
  action?: AuditAction;
  /** ISO date-times; `since` defaults to the retention limit. */
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}

export interface AuditPage {
  items: AuditEvent[];
  nextCursor?: string;
}

/**
 * The answer header of a management action: whether its audit event is stored (`stored`), still
 * waiting for the store (`pending`), or kept by no store (`off`, the log only).
 */
export const AUDIT_HEADER = 'Tollgate-Audit';

export interface AuditSettings {
  flushMs: number;
  retentionDays: number;
  /** Whose X-Forwarded-For is believed for the audited address. */
  proxies: ProxyTrust;
  /** Refusals of one key recorded at most once per this many ms (the rest are counted). */
  refusalIntervalMs: number;
  /**
   * Refusals seen by sidecars, which hold no audit store: a sidecar `send`s them to the gateways
   * through Redis (`tg:audit:sidecar`, which its Redis user may only append to); a gateway with a
   * store `collect`s them into the owners' trails.
   */
  sidecarReports?: 'send' | 'collect' | 'bound';
}

const DAY_MS = 86_400_000;
/** Events held when the store keeps failing; past this the oldest are dropped (and logged). */
const MAX_PENDING = 100_000;
/** How long a management action waits for its event to be stored before answering without. */
const SETTLE_TIMEOUT_MS = 3_000;
/** Events taken from the shared backlog per write. */
const BACKLOG_BATCH = 1_000;
/** How long one replica may hold the backlog's drain. */
const BACKLOG_LOCK_MS = 15_000;
/** Trims what a drain stored and lets the drain go, only if this replica still holds it. */
const RELEASE_BACKLOG = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then redis.call('LTRIM', KEYS[1], ARGV[2], -1) end
redis.call('DEL', KEYS[2])
return 1`;

const ownerDigest = (owner: string): string => createHash('sha256').update(owner).digest('hex').slice(0, 32);
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
/**
 * The exact name of a segment this class writes (`write`): the retention sweep deletes nothing
 * else, whatever else shares the bucket or prefix (`s3://lake` may hold `sales/2024-01-31/…`).
 */
const SEGMENT_NAME = /^[0-9a-f]{32}\/(\d{4}-\d{2}-\d{2})\/\d+-[0-9a-f]{8}-[0-9a-z]+\.jsonl$/;
/** Segments read at once by one query: a long range is read a few at a time, not all together. */
const READ_CONCURRENCY = 8;

const invalidCursor = (): TollgateError =>
  new TollgateError('invalid_cursor', 'cursor is not one this API returned; start again without it', {
    field: 'cursor',
  });

type Position = Pick<AuditEvent, 'at' | 'id'>;

/** How far apart the clocks of the replicas that wrote segments may be. */
const CLOCK_SKEW_MS = 60_000;

/** When a segment was written, from its name (`<ms>-<replica>-<seq>.jsonl`); unknown: as if now. */
function writtenAt(name: string): number {
  const ms = Number(/\/(\d+)-[^/]*\.jsonl$/.exec(name)?.[1]);
  return Number.isFinite(ms) ? ms : Date.now();
}

/** Newest first; same-millisecond events by id. */
const newerFirst = (a: Position, b: Position): number =>
  a.at !== b.at ? (a.at < b.at ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;

interface Refusals {
  at: number;
  suppressed: number;
  owner: string;
  name: string | undefined;
  code: string;
  /** A sidecar's: the key's hash, for its report. */
  hash?: string;
}

/**
 * The audit trail of key events. Recording is a push to memory; every `flushMs` the events are
 * written as new immutable segments, one per owner and day, to a SegmentStore outside Redis (a
 * directory standalone, object storage on a cluster), so the trail survives a Redis flush and any
 * restart, and replicas never write the same object. Reads go to the store (after flushing what
 * this replica holds); segments are immutable, so they are cached once read. Segments older than
 * the retention limit are deleted by an hourly sweep.
 *
 * Without a store (a cluster with no audit storage configured) events still reach the log, and
 * reads answer audit_not_configured.
 */
export class AuditLog {
  private pending: AuditEvent[] = [];
  private readonly flusher: PeriodicFlush;
  private sweeper: NodeJS.Timeout | undefined;
  private seq = 0;
  private readonly replica = randomBytes(4).toString('hex');
  private readonly segments = growingLru<string, AuditEvent[]>(2_000);
  /** Per key: when its last refusal was recorded, and how many were not recorded since. */
  private readonly refusals = growingLru<string, Refusals>(10_000);
  /** The same for sidecars' reports, apart: a report cannot reset the tally of what this saw. */
  private readonly reported = growingLru<string, Refusals>(10_000);

  /** Events a write has taken and not yet stored. */
  private inFlight: AuditEvent[] = [];
  /** Events this process put in the shared backlog (stored later, by whichever replica). */
  private readonly spilled = new WeakSet<AuditEvent>();

  constructor(
    private readonly store: SegmentStore | undefined,
    private readonly log: Logger,
    private readonly settings: AuditSettings,
    private readonly links: {
      /**
       * Where events the store refused wait (`tg:audit:backlog`), shared by every replica, and
       * where sidecars' reports arrive (`tg:audit:sidecar`).
       */
      redis?: Redis;
      /** A key's grant by its hash, from the sealed index: who a sidecar's report is about. */
      grantOf?: (hash: string) => Promise<KeyGrant | undefined>;
    } = {},
  ) {
    this.flusher = new PeriodicFlush(() => this.write(), settings.flushMs);
  }

  get configured(): boolean {
    return this.store !== undefined;
  }

  start(): void {
    // A sidecar has no store, but its flushes still tell the counts of refusal bursts.
    if (this.store === undefined && this.settings.sidecarReports === undefined) return;
    this.flusher.start();
    if (this.store === undefined) return;
    this.sweeper = setInterval(() => void this.sweep(), 3_600_000);
    this.sweeper.unref();
    void this.sweep();
  }

  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    await this.flusher.stop();
  }

  private readonly listeners: Array<(event: AuditEvent) => void> = [];

  /** Told of every event recorded (the webhooks hear of management actions here). */
  subscribe(listener: (event: AuditEvent) => void): void {
    this.listeners.push(listener);
  }

  record(r: AuditRecord, nowMs = Date.now()): void {
    const event: AuditEvent = {
      id: `${nowMs.toString(36).padStart(9, '0')}-${this.replica}-${(this.seq++).toString(36)}`,
      at: new Date(nowMs).toISOString(),
      action: r.action,
      ...(r.keyId === undefined ? {} : { keyId: r.keyId }),
      ...(r.identity === undefined ? {} : { identity: r.identity }),
      ...(r.key?.name === undefined ? {} : { keyName: r.key.name }),
      ...(r.key?.start === undefined ? {} : { keyStart: r.key.start }),
      owner: r.owner,
      actor: r.actor,
    };
    const address = r.req === undefined ? undefined : clientAddress(r.req, this.settings.proxies);
    if (address !== undefined) event.address = address;
    if (r.detail !== undefined) event.detail = r.detail;
    this.log.info({ audit: event }, 'audit');
    for (const listener of this.listeners) listener(event);
    if (this.store === undefined) return;
    if (this.pending.length >= MAX_PENDING) {
      this.pending.shift();
      this.log.error({ store: this.store.uri }, 'audit store unreachable for too long: oldest event dropped');
    }
    this.pending.push(event);
  }

  /**
   * A refused use of a key: recorded at most once per key per refusalIntervalMs, carrying how many
   * refusals were not recorded before it, so a flood of bad calls cannot fill the trail.
   */
  refused(
    grant: { id: string; owner: string; name?: string | undefined },
    code: string,
    req: CallHead,
    nowMs = Date.now(),
  ): void {
    const last = this.refusals.get(grant.id);
    if (last !== undefined && nowMs - last.at < this.settings.refusalIntervalMs) {
      last.suppressed++;
      return;
    }
    const tally: Refusals = { at: nowMs, suppressed: 0, owner: grant.owner, name: grant.name, code };
    if (this.settings.sidecarReports === 'send') {
      const hash = presentedKeyHash(req.headers.authorization);
      if (hash === undefined) return;
      this.refusals.set(grant.id, { ...tally, hash });
      this.send(hashReportLine(hash, code, 1 + (last?.suppressed ?? 0)), grant.id);
      return;
    }
    this.refusals.set(grant.id, tally);
    this.recordRefusal(grant, code, { unrecorded: last?.suppressed ?? 0, req }, nowMs);
  }

  /** The event of a refused key: `key.expired` or `key.refused`, with what was left unrecorded. */
  private recordRefusal(
    grant: { id: string; owner: string; name?: string | undefined },
    code: string,
    how: { unrecorded: number; via?: 'sidecar'; req?: CallHead },
    nowMs: number,
  ): void {
    const detail: Record<string, string | number> = { code };
    if (how.unrecorded > 0) detail['unrecordedBefore'] = how.unrecorded;
    if (how.via !== undefined) detail['via'] = how.via;
    this.record(
      {
        action: code === 'expired_api_key' ? 'key.expired' : 'key.refused',
        keyId: grant.id,
        key: { name: grant.name },
        owner: grant.owner,
        actor: `key:${grant.id}`,
        ...(how.req === undefined ? {} : { req: how.req }),
        detail,
      },
      nowMs,
    );
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  /**
   * Waits until every event recorded so far is in the store, for a management action to answer
   * only once its event is durable: `stored`, or `pending` (the store did not take it within
   * `timeoutMs`; it stays queued, in the shared backlog if Redis takes it), or `off` (no store).
   */
  async settle(timeoutMs = SETTLE_TIMEOUT_MS): Promise<'stored' | 'pending' | 'off'> {
    if (this.store === undefined) return 'off';
    const mine = new Set([...this.inFlight, ...this.pending]);
    const unstored = (): boolean =>
      [...this.inFlight, ...this.pending].some((e) => mine.has(e)) ||
      [...mine].some((e) => this.spilled.has(e));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    // Two rounds: the first may be a write already under way that took none of these.
    for (let round = 0; round < 2 && unstored(); round++) {
      await Promise.race([this.flush(), timeout]);
    }
    clearTimeout(timer);
    return unstored() ? 'pending' : 'stored';
  }

  /** One page of `owner`'s events, newest first. */
  async query(owner: string, q: AuditQuery): Promise<AuditPage> {
    const store = this.requireStore();
    await this.flush();
    const now = Date.now();
    const oldest = now - this.settings.retentionDays * DAY_MS;
    const since = Math.max(q.since === undefined ? oldest : Date.parse(q.since), oldest);
    const until = q.until === undefined ? now + DAY_MS : Date.parse(q.until);
    const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    const prefix = `${ownerDigest(owner)}/`;
    let names: string[];
    try {
      names = await store.list(prefix);
    } catch (cause) {
      throw this.unavailable(cause);
    }
    const [firstDay, lastDay] = [dayOf(since), dayOf(until)];
    // Newest segment first: a page is made from the newest events, so most queries read a few
    // segments, not every one of 90 days (an owner's every action may have written one).
    const wanted = names
      .filter((n) => {
        const day = n.slice(prefix.length, prefix.length + 10);
        return day >= firstDay && day <= lastDay;
      })
      .map((name) => ({ name, written: writtenAt(name) }))
      .sort((a, b) => b.written - a.written);
    const matches = (e: AuditEvent): boolean => {
      const at = Date.parse(e.at);
      return (
        e.owner === owner &&
        (q.keyId === undefined || e.keyId === q.keyId) &&
        (q.identity === undefined || e.identity === q.identity) &&
        (q.action === undefined || e.action === q.action) &&
        at >= since &&
        at <= until &&
        (after === undefined || newerFirst(e, after) > 0)
      );
    };
    // The newest limit + 1 that match, newest first (the extra one says a next page exists). An
    // event stored twice (a drain of the backlog cut short after its write) is one event.
    const selected: AuditEvent[] = [];
    const seen = new Set<string>();
    const keep = (e: AuditEvent): void => {
      if (seen.has(e.id)) return;
      seen.add(e.id);
      const last = selected.at(-1);
      if (!matches(e) || (selected.length > q.limit && last !== undefined && newerFirst(e, last) >= 0))
        return;
      let lo = 0;
      let hi = selected.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (newerFirst(selected[mid]!, e) <= 0) lo = mid + 1;
        else hi = mid;
      }
      selected.splice(lo, 0, e);
      if (selected.length > q.limit + 1) selected.pop();
    };
    for (let i = 0; i < wanted.length; i += READ_CONCURRENCY) {
      const batch = wanted.slice(i, i + READ_CONCURRENCY);
      const read = await Promise.all(batch.map((s) => this.readSegment(s.name)));
      for (const e of read.flat()) keep(e);
      // A segment holds only events recorded before it was written: once the page's events are
      // all newer than the next segment (clocks of replicas apart by up to a minute), none of the
      // segments left can hold one that belongs on it.
      const next = wanted[i + READ_CONCURRENCY];
      const edge = selected[q.limit];
      if (next !== undefined && edge !== undefined && Date.parse(edge.at) > next.written + CLOCK_SKEW_MS)
        break;
    }
    const items = selected.slice(0, q.limit);
    const last = items.at(-1);
    return selected.length > q.limit && last !== undefined
      ? { items, nextCursor: Buffer.from(JSON.stringify([last.at, last.id])).toString('base64url') }
      : { items };
  }

  private async readSegment(name: string): Promise<AuditEvent[]> {
    const cached = this.segments.get(name);
    if (cached !== undefined) return cached;
    let text: string | undefined;
    try {
      text = await this.requireStore().get(name);
    } catch (cause) {
      throw this.unavailable(cause);
    }
    const events: AuditEvent[] = [];
    for (const line of (text ?? '').split('\n')) {
      if (line === '') continue;
      try {
        const parsed = auditEventSchema.safeParse(JSON.parse(line));
        if (parsed.success) events.push(parsed.data);
        else this.log.warn({ segment: name }, 'audit line not in the event shape: skipped');
      } catch {
        this.log.warn({ segment: name }, 'audit line not JSON: skipped');
      }
    }
    if (text !== undefined) this.segments.set(name, events);
    return events;
  }

  /**
   * A burst of refusals followed by silence: what was not recorded is told once the interval has
   * passed, with no next refusal to carry it (a sidecar sends it on as a report).
   */
  private reportUnrecorded(nowMs = Date.now()): void {
    for (const [tallies, via] of [
      [this.refusals, undefined],
      [this.reported, 'sidecar'],
    ] as const) {
      for (const [keyId, r] of tallies.entries()) {
        if (r.suppressed === 0 || nowMs - r.at < this.settings.refusalIntervalMs) continue;
        const unrecorded = r.suppressed;
        tallies.set(keyId, { ...r, at: nowMs, suppressed: 0 });
        if (r.hash !== undefined) {
          this.send(hashReportLine(r.hash, r.code, unrecorded), keyId);
          continue;
        }
        const grant = { id: keyId, owner: r.owner, name: r.name };
        this.recordRefusal(grant, r.code, { unrecorded, ...(via ? { via } : {}) }, nowMs);
      }
    }
  }

  private send(line: string, keyId: string): void {
    const redis = this.links.redis;
    if (redis === undefined) return;
    sendReport(redis, line).catch((err: unknown) => {
      this.log.warn({ err: (err as Error).message, keyId }, 'sidecar refusal not reported');
    });
  }

  /**
   * Sidecars' reports (see sidecar-reports.ts), into the owners' trails under a once-per-key limit
   * of their own (a burst reported by many sidecars is one event and a count), marked `via:
   * sidecar`. Who and which key come from the sealed index, never from the report.
   */
  private async collectReports(nowMs = Date.now()): Promise<void> {
    const { redis, grantOf } = this.links;
    if (this.settings.sidecarReports === 'bound' && redis !== undefined) {
      await boundReports(redis).catch(() => undefined);
      return;
    }
    if (this.settings.sidecarReports !== 'collect' || redis === undefined || grantOf === undefined) return;
    let reports;
    try {
      reports = await takeReports(redis, grantOf);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'sidecar refusal reports not read; next flush retries');
      return;
    }
    for (const { grant, code, count } of reports) {
      const last = this.reported.get(grant.id);
      if (last !== undefined && nowMs - last.at < this.settings.refusalIntervalMs) {
        last.suppressed += count;
        continue;
      }
      this.reported.set(grant.id, { at: nowMs, suppressed: 0, owner: grant.owner, name: grant.name, code });
      const unrecorded = (last?.suppressed ?? 0) + count - 1;
      this.recordRefusal(grant, code, { unrecorded, via: 'sidecar' }, nowMs);
    }
  }

  private async write(): Promise<void> {
    await this.collectReports();
    this.reportUnrecorded();
    const store = this.store;
    if (store === undefined) return;
    const backlog = await this.readBacklog();
    const fresh = this.pending;
    this.pending = [];
    const batch = [...backlog.events, ...fresh];
    if (batch.length === 0) return void (await backlog.done(false));
    this.inFlight = batch;
    let failed: Set<AuditEvent>;
    try {
      failed = await this.writeBatch(store, batch);
    } catch (err) {
      this.log.error({ err }, 'audit write failed unexpectedly; will retry');
      failed = new Set(batch);
    } finally {
      this.inFlight = [];
    }
    // The backlog's events leave it only once all of them are stored; else they stay for the next
    // write (one stored twice is read once: queries drop repeated ids).
    await backlog.done(backlog.events.every((e) => !failed.has(e)));
    const unstored = fresh.filter((e) => failed.has(e));
    if (unstored.length === 0) return;
    // To the shared backlog, where a restart cannot lose them; in memory (kept, in order, ahead of
    // what arrived meanwhile) only if Redis will not take them either.
    if (await this.spill(unstored)) return;
    this.pending = [...unstored, ...this.pending];
  }

  /** Writes the batch as one segment per owner and day; resolves with the events not stored. */
  private async writeBatch(store: SegmentStore, batch: AuditEvent[]): Promise<Set<AuditEvent>> {
    const groups = new Map<string, AuditEvent[]>();
    for (const e of batch) {
      const name = `${ownerDigest(e.owner)}/${dayOf(Date.parse(e.at))}/`;
      groups.set(name, [...(groups.get(name) ?? []), e]);
    }
    const failed = new Set<AuditEvent>();
    const stamp = `${Date.now()}-${this.replica}-${(this.seq++).toString(36)}`;
    await Promise.all(
      [...groups].map(async ([dir, events]) => {
        try {
          await store.put(`${dir}${stamp}.jsonl`, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
        } catch (err) {
          for (const e of events) failed.add(e);
          this.log.warn({ err: (err as Error).message, store: store.uri }, 'audit write failed; will retry');
        }
      }),
    );
    return failed;
  }

  private async spill(events: AuditEvent[]): Promise<boolean> {
    if (this.links.redis === undefined) return false;
    try {
      const replies = await execAll(
        this.links.redis
          .multi()
          .rpush(redisKeys.auditBacklog, ...events.map((e) => JSON.stringify(e)))
          .ltrim(redisKeys.auditBacklog, -MAX_PENDING, -1),
      );
      const length = Number(replies[0] ?? 0);
      if (length > MAX_PENDING) {
        this.log.error(
          { dropped: length - MAX_PENDING },
          'audit store unreachable for too long: the oldest events of the backlog dropped',
        );
      }
      for (const e of events) this.spilled.add(e);
      return true;
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'audit backlog not kept in Redis; held in memory');
      return false;
    }
  }

  /**
   * The backlog's oldest events, read without taking them: one replica at a time holds the drain
   * (a lock that expires, so a replica that dies while holding it stops nobody), and `done(true)`
   * removes them only once they are stored. A crash in between loses nothing.
   */
  private async readBacklog(): Promise<{ events: AuditEvent[]; done: (stored: boolean) => Promise<void> }> {
    const none = { events: [], done: async () => undefined };
    const redis = this.links.redis;
    if (redis === undefined) return none;
    const holder = `${this.replica}-${(this.seq++).toString(36)}`;
    let lines: string[];
    try {
      if ((await redis.set(redisKeys.auditBacklogLock, holder, 'PX', BACKLOG_LOCK_MS, 'NX')) !== 'OK')
        return none;
      lines = await redis.lrange(redisKeys.auditBacklog, 0, BACKLOG_BATCH - 1);
    } catch {
      return none;
    }
    const events = lines.flatMap((line) => {
      try {
        const parsed = auditEventSchema.safeParse(JSON.parse(line));
        return parsed.success ? [parsed.data] : [];
      } catch {
        return [];
      }
    });
    return {
      events,
      done: async (stored) => {
        // Only while this replica still holds the drain: past the lock's expiry another may have
        // read the same events, and trimming now could drop ones it has not stored.
        await redis
          .eval(
            RELEASE_BACKLOG,
            2,
            redisKeys.auditBacklog,
            redisKeys.auditBacklogLock,
            holder,
            stored ? lines.length : 0,
          )
          .catch((err: unknown) =>
            this.log.warn(
              { err: (err as Error).message },
              'audit backlog not trimmed; its events will be written again',
            ),
          );
      },
    };
  }

  private async sweep(): Promise<void> {
    const store = this.store;
    if (store === undefined) return;
    const keepFrom = dayOf(Date.now() - this.settings.retentionDays * DAY_MS);
    try {
      const old = (await store.list('')).filter((n) => {
        const day = SEGMENT_NAME.exec(n)?.[1];
        return day !== undefined && day < keepFrom;
      });
      if (old.length > 0) {
        await store.delete(old);
        this.log.info({ segments: old.length, before: keepFrom }, 'audit segments past retention deleted');
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'audit retention sweep failed; next one in an hour');
    }
  }

  private requireStore(): SegmentStore {
    if (this.store === undefined) {
      throw new TollgateError(
        'audit_not_configured',
        'this gateway keeps no audit trail to read; set its auditUri (chart: audit.storageUri) to a file:// or s3:// location',
      );
    }
    return this.store;
  }

  private unavailable(cause: unknown): TollgateError {
    return new TollgateError(
      'audit_store_unavailable',
      `could not read the audit trail from ${this.store?.uri ?? 'its store'}; try again shortly`,
      { cause },
    );
  }
}

function decodeCursor(cursor: string): Position {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && typeof value[0] === 'string' && typeof value[1] === 'string') {
      return { at: value[0], id: value[1] };
    }
  } catch {
    // Reported below.
  }
  throw invalidCursor();
}
