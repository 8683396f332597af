import { hostname } from 'node:os';
import { Counter, type Registry } from 'prom-client';
import type { Logger } from '../../../common/logger.js';
import { NO_COUNT, type ShareRefused } from '../../admission/shares.js';
import { PeriodicFlush } from '../../periodic-flush.js';
import type { SegmentStore } from '../../segments/segment-store.js';
import type { PayloadRecord } from './record.js';

export interface PayloadLogOptions {
  /** How often buffered records are written: one object per model and hour per interval. */
  intervalMs: number;
  /**
   * Records held between writes, in bytes: past it new records are dropped (and counted). One team
   * (the Models' namespace) may fill at most a quarter of it, however many logging models it has,
   * so one team's logging cannot crowd out the others'.
   */
  bufferBytes: number;
  /** This replica's name in object names (the pod's, on a cluster). */
  replica?: string;
}

type Outcome = 'written' | 'dropped_buffer_full' | 'dropped_write_failed' | 'dropped_unwritable';

/**
 * The models' payload logs: sampled calls buffered in memory and written as time-partitioned JSON
 * Lines, `namespace=<ns>/model=<m>/date=<yyyy-mm-dd>/hour=<hh>/<replica>-<time>-<n>.jsonl`, the Hive layout
 * DuckDB, Spark or Athena query as a table. Logging never slows or fails a call: `offer` only
 * appends to a bounded buffer, writes happen off the request path, and what the buffer or the
 * store cannot take is dropped and counted (`tollgate_payload_log_records_total{outcome}`).
 */
export class PayloadLog {
  private buffered = new Map<string, string[]>();
  private bytes = 0;
  private byTeam = new Map<string, number>();
  private seq = 0;
  private readonly replica: string;
  private readonly records: Counter<'model' | 'outcome'>;
  private readonly flusher: PeriodicFlush;

  constructor(
    private readonly store: SegmentStore,
    private readonly opts: PayloadLogOptions,
    registry: Registry,
    private readonly log: Logger,
    private readonly shareRefused: ShareRefused = NO_COUNT,
  ) {
    this.replica = (opts.replica ?? hostname()).replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 63) || 'gateway';
    this.records = new Counter({
      name: 'tollgate_payload_log_records_total',
      help: 'Sampled inference calls of models that log their payloads: written, or dropped (buffer or the team’s share of it full, write failed, not serialisable)',
      labelNames: ['model', 'outcome'],
      registers: [registry],
    });
    this.flusher = new PeriodicFlush(() => this.write(), opts.intervalMs);
  }

  start(): void {
    this.flusher.start();
  }

  /** Writes what is buffered; the gateway calls it as it shuts down. */
  async stop(): Promise<void> {
    await this.flusher.stop();
  }

  /**
   * Whether a record of this model would be kept now: checked before the record is built, so a
   * full buffer costs a call nothing. A refusal is counted.
   */
  hasRoom(model: string, team: string): boolean {
    if (this.bytes < this.opts.bufferBytes && (this.byTeam.get(team) ?? 0) < this.teamShare()) return true;
    this.full(model, team);
    return false;
  }

  /** Buffers one record of `team`'s, of the Model `uid`; never throws, never waits. */
  offer(record: PayloadRecord, team: string, uid?: string): void {
    let line: string;
    try {
      line = JSON.stringify(record);
    } catch {
      // Values are bounded in depth and size before they get here; should one still not serialise,
      // the record is lost, never the call.
      this.count(record.model, 'dropped_unwritable');
      return;
    }
    const size = Buffer.byteLength(line) + 1;
    const held = this.byTeam.get(team) ?? 0;
    if (this.bytes + size > this.opts.bufferBytes || held + size > this.teamShare()) {
      this.full(record.model, team);
      return;
    }
    const partition = partitionOf(team, record.model, uid, record.time);
    const lines = this.buffered.get(partition);
    if (lines === undefined) this.buffered.set(partition, [line]);
    else lines.push(line);
    this.bytes += size;
    this.byTeam.set(team, held + size);
  }

  /** A record that could not be made: counted, as every loss is. */
  lost(model: string): void {
    this.count(model, 'dropped_unwritable');
  }

  /** A record dropped as the buffer or its team's share of it is full: counted for the model and the team. */
  private full(model: string, team: string): void {
    this.count(model, 'dropped_buffer_full');
    this.shareRefused('payload_log_buffer', team);
  }

  private teamShare(): number {
    return Math.floor(this.opts.bufferBytes / 4);
  }

  /** Writes what is buffered now (tests; the timer does it every interval). */
  flush(): Promise<void> {
    return this.flusher.flush();
  }

  /** Every partition's buffered records as one object each. */
  private async write(): Promise<void> {
    if (this.buffered.size === 0) return;
    const batch = this.buffered;
    this.buffered = new Map();
    this.bytes = 0;
    this.byTeam = new Map();
    const stamp = new Date()
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z');
    await Promise.all(
      [...batch].map(async ([partition, lines]) => {
        const model = modelOfPartition(partition);
        const name = `${partition}/${this.replica}-${stamp}-${this.seq++}.jsonl`;
        try {
          await this.store.put(name, `${lines.join('\n')}\n`);
          this.count(model, 'written', lines.length);
        } catch (err) {
          this.count(model, 'dropped_write_failed', lines.length);
          this.log.warn(
            { err, model, records: lines.length },
            `payload log not written to ${this.store.uri}`,
          );
        }
      }),
    );
  }

  private count(model: string, outcome: Outcome, n = 1): void {
    this.records.inc({ model, outcome }, n);
  }
}

/**
 * `namespace=<ns>/model=<m>/uid=<uid>/date=<yyyy-mm-dd>/hour=<hh>` of a record's UTC time: under
 * the Model's namespace and uid, so a name taken again after it was given up (by another team, or
 * made again by the same one) writes under its own prefix, never beside the last holder's records
 * (and a bucket policy can give each team its prefix). A route of no namespace: `model=<m>/...`;
 * of no uid (standalone manifests): no `uid=` part.
 */
export function partitionOf(team: string, model: string, uid: string | undefined, time: string): string {
  const prefix = team === '' ? '' : `namespace=${team}/`;
  const incarnation = uid === undefined || uid === '' ? '' : `uid=${uid}/`;
  return `${prefix}model=${model}/${incarnation}date=${time.slice(0, 10)}/hour=${time.slice(11, 13)}`;
}

const modelOfPartition = (partition: string): string => /(?:^|\/)model=([^/]*)\//.exec(partition)?.[1] ?? '';
