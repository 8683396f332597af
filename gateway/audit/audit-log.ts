import { randomBytes } from 'node:crypto';
import type { CallHead } from '../http/call-head.js';
import type { Redis } from 'ioredis';
import { growingLru } from '../../common/growing-lru.js';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { clientAddress, type ProxyTrust } from '../http/client-address.js';
import { currentTraceId } from '../../common/tracing/call-trace.js';
import {
  boundReports,
  hashReportLine,
  presentedKeyHash,
  sendReport,
  takeReports,
} from './sidecar-reports.js';
import type { SegmentStore } from '../segments/segment-store.js';
import { PeriodicFlush } from '../periodic-flush.js';
import type { AuditEvent, AuditPage, AuditQuery, AuditRecord } from './audit-event.js';
import { AuditBacklog, MAX_PENDING } from './audit-backlog.js';
import { AuditReader } from './audit-reader.js';
import { DAY_MS, dayOf, ownerDigest, SEGMENT_NAME } from './segment-layout.js';

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

/** How long a management action waits for its event to be stored before answering without. */
const SETTLE_TIMEOUT_MS = 3_000;
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
  private readonly reader: AuditReader | undefined;
  private readonly backlog: AuditBacklog;
  /** Per key: when its last refusal was recorded, and how many were not recorded since. */
  private readonly refusals = growingLru<string, Refusals>(10_000);
  /** The same for sidecars' reports, apart: a report cannot reset the tally of what this saw. */
  private readonly reported = growingLru<string, Refusals>(10_000);

  /** Events a write has taken and not yet stored. */
  private inFlight: AuditEvent[] = [];

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
    this.reader = store === undefined ? undefined : new AuditReader(store, log, settings.retentionDays);
    this.backlog = new AuditBacklog(links.redis, log, this.replica);
  }

  /** One page of `owner`'s events, newest first, this replica's own included. */
  async query(owner: string, q: AuditQuery): Promise<AuditPage> {
    const reader = this.reader;
    if (reader === undefined) throw notConfigured();
    await this.flush();
    return reader.query(owner, q);
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
    const traceId = currentTraceId();
    if (traceId !== undefined) event.traceId = traceId;
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
      [...mine].some((e) => this.backlog.spilled.has(e));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    // Two rounds: the first may be a write already under way that took none of these.
    for (let round = 0; round < 2 && unstored(); round++) {
      await Promise.race([this.flush(), timeout]);
    }
    clearTimeout(timer);
    return unstored() ? 'pending' : 'stored';
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
    const backlog = await this.backlog.read();
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
    if (await this.backlog.spill(unstored)) return;
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
}

const notConfigured = (): TollgateError =>
  new TollgateError(
    'audit_not_configured',
    'this gateway keeps no audit trail to read; set its auditUri (chart: audit.storageUri) to a file:// or s3:// location',
  );
