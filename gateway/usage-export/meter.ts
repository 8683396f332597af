import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import { redisKeys } from '../../common/redis/schema.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { PeriodicFlush } from '../periodic-flush.js';

/** What a call was to, as usage is exported: a model, a workflow's service, a platform resource, or the V2 server. */
export type Metered =
  | { kind: 'model'; name: string }
  /** `<workflow>/<service>`. */
  | { kind: 'workflow'; name: string }
  | { kind: 'platform'; name: string }
  /** The V2 server's own endpoints and the listings of models. */
  | { kind: 'server' };

/** The V2 server's own endpoints and listings, as a call's target. */
export const SERVER: Metered = { kind: 'server' };

/** Whose usage one exported figure is: a key, its owner and identity, and (unless a refusal came before it was known) the target. */
export type UsageGroup = [
  keyId: string,
  owner: string,
  identity: string | null,
  kind: Metered['kind'] | null,
  name: string | null,
];

interface Figures {
  group: UsageGroup;
  calls: number;
  rows: number;
  credits: number;
  refusals: Map<string, number>;
}

/** One flush's figures, sent until Redis takes them; its id makes a retried one count once. */
interface Batch {
  id: string;
  minutes: Map<number, Map<string, Figures>>;
}

/** Batches kept while Redis is away (at one a flush: an hour of them at the default second). */
const MAX_UNSENT = 3_600;
/** How long a batch's id is remembered: longer than any retry of it. */
const BATCH_MARK_S = 2 * 3_600 + MAX_UNSENT;

// Applies one batch once: KEYS[1] its mark, KEYS[2] the open minutes, KEYS[3..] the minutes'
// hashes; ARGV[1] the hashes' TTL, ARGV[2] the mark's, then per hash: its minute, its field count
// and the field, amount pairs. The figures go in before the minute is listed open, so a closer
// that lists it finds them.
const APPLY = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) == false then return 0 end
local a = 3
for k = 3, #KEYS do
  local minute = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  for i = 1, n do
    redis.call('HINCRBY', KEYS[k], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  redis.call('EXPIRE', KEYS[k], ARGV[1])
  redis.call('ZADD', KEYS[2], minute, minute)
end
return 1`;

/**
 * Usage for export, counted on the request path in memory (per epoch minute, key, identity and
 * target: calls, rows, credits at their price, refusals by code) and added to the minute's hash in
 * Redis every `flushMs`. Each flush is a batch applied once by id (APPLY), so a flush whose answer
 * was lost is retried without being counted twice; batches wait, in order, while Redis is away.
 * A central gateway's only: the minutes are closed into the export stream by closer.ts.
 */
export class UsageMeter {
  private current: Batch = newBatch();
  private unsent: Batch[] = [];
  private readonly flusher: PeriodicFlush;

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    flushMs: number,
    /** How long an unclosed minute's figures are kept (the export's retention). */
    private readonly keepSeconds: number,
  ) {
    this.flusher = new PeriodicFlush(() => this.write(), flushMs);
  }

  /** An admitted call, at the credits its price came to (whether or not the key has a budget). */
  called(grant: KeyGrant, what: Metered, credits: number, nowMs = Date.now()): void {
    const f = this.figures(grant, what, nowMs);
    f.calls++;
    f.credits += credits;
  }

  /** The rows of an admitted inference call's batch, once it is checked. */
  rows(grant: KeyGrant, what: Metered, rows: number, nowMs = Date.now()): void {
    if (rows > 0) this.figures(grant, what, nowMs).rows += rows;
  }

  /** A call of an existing key refused with `code`; `what` when the refusal came after the target was known. */
  refused(grant: KeyGrant, code: string, what: Metered | undefined, nowMs = Date.now()): void {
    const f = this.figures(grant, what, nowMs);
    f.refusals.set(code, (f.refusals.get(code) ?? 0) + 1);
  }

  start(): void {
    this.flusher.start();
  }

  /** Stops the timer and writes what is left. */
  stop(): Promise<void> {
    return this.flusher.stop();
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  private figures(grant: KeyGrant, what: Metered | undefined, nowMs: number): Figures {
    const minute = Math.floor(nowMs / 60_000);
    let groups = this.current.minutes.get(minute);
    if (groups === undefined) {
      groups = new Map();
      this.current.minutes.set(minute, groups);
    }
    const identity = grant.identity?.name ?? null;
    const name = what === undefined || what.kind === 'server' ? null : what.name;
    const slot = `${grant.id}\u0000${identity ?? ''}\u0000${what?.kind ?? ''}\u0000${name ?? ''}`;
    let f = groups.get(slot);
    if (f === undefined) {
      f = {
        group: [grant.id, grant.owner, identity, what?.kind ?? null, name],
        calls: 0,
        rows: 0,
        credits: 0,
        refusals: new Map(),
      };
      groups.set(slot, f);
    }
    return f;
  }

  private async write(): Promise<void> {
    if (this.current.minutes.size > 0) {
      this.unsent.push(this.current);
      this.current = newBatch();
    }
    while (this.unsent.length > 0) {
      const batch = this.unsent[0];
      if (batch === undefined) break;
      try {
        await this.apply(batch);
      } catch (err) {
        if (this.unsent.length > MAX_UNSENT) {
          const dropped = this.unsent.splice(0, this.unsent.length - MAX_UNSENT);
          this.log.error({ batches: dropped.length }, 'usage for export dropped: Redis away too long');
        }
        this.log.warn(
          { err: (err as Error).message, batches: this.unsent.length },
          'usage export flush failed; will retry',
        );
        return;
      }
      this.unsent.shift();
    }
  }

  private async apply(batch: Batch): Promise<void> {
    const keys = [redisKeys.usageExportBatch(batch.id), redisKeys.usageExportOpen];
    const args: Array<string | number> = [this.keepSeconds, BATCH_MARK_S];
    for (const [minute, groups] of batch.minutes) {
      const fields: Array<string | number> = [];
      for (const f of groups.values()) {
        const group = JSON.stringify(f.group);
        if (f.calls > 0) fields.push(`c|${group}`, f.calls);
        if (f.rows > 0) fields.push(`w|${group}`, f.rows);
        if (f.credits > 0) fields.push(`k|${group}`, f.credits);
        for (const [code, n] of f.refusals) fields.push(`x:${code}|${group}`, n);
      }
      keys.push(redisKeys.usageExportMinute(minute));
      args.push(minute, fields.length / 2, ...fields);
    }
    await this.redis.eval(APPLY, keys.length, ...keys, ...args);
  }
}

const newBatch = (): Batch => ({ id: randomBytes(12).toString('hex'), minutes: new Map() });
