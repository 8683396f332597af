import { growingLru } from '../../common/growing-lru.js';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import type { SegmentStore } from '../segments/segment-store.js';
import { parseEventLine, type AuditEvent, type AuditPage, type AuditQuery } from './audit-event.js';
import { DAY_MS, dayOf, ownerDigest, writtenAt } from './segment-layout.js';

/** Segments read at once by one query: a long range is read a few at a time, not all together. */
const READ_CONCURRENCY = 8;

const invalidCursor = (): TollgateError =>
  new TollgateError('invalid_cursor', 'cursor is not one this API returned; start again without it', {
    field: 'cursor',
  });

type Position = Pick<AuditEvent, 'at' | 'id'>;

/** How far apart the clocks of the replicas that wrote segments may be. */
const CLOCK_SKEW_MS = 60_000;

/** Newest first; same-millisecond events by id. */
const newerFirst = (a: Position, b: Position): number =>
  a.at !== b.at ? (a.at < b.at ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;

/**
 * Reads an owner's trail from the store, a page at a time, newest first. Segments are immutable,
 * so each is cached once read.
 */
export class AuditReader {
  private readonly segments = growingLru<string, AuditEvent[]>(2_000);

  constructor(
    private readonly store: SegmentStore,
    private readonly log: Logger,
    private readonly retentionDays: number,
  ) {}

  /** One page of `owner`'s events, newest first. */
  async query(owner: string, q: AuditQuery): Promise<AuditPage> {
    const store = this.store;
    const now = Date.now();
    const oldest = now - this.retentionDays * DAY_MS;
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
      text = await this.store.get(name);
    } catch (cause) {
      throw this.unavailable(cause);
    }
    const events: AuditEvent[] = [];
    for (const line of (text ?? '').split('\n')) {
      if (line === '') continue;
      const event = parseEventLine(line);
      if (event !== undefined) events.push(event);
      else
        this.log.warn({ segment: name }, 'audit line not an event (not JSON, or not in its shape): skipped');
    }
    if (text !== undefined) this.segments.set(name, events);
    return events;
  }

  private unavailable(cause: unknown): TollgateError {
    return new TollgateError(
      'audit_store_unavailable',
      `could not read the audit trail from ${this.store.uri}; try again shortly`,
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
