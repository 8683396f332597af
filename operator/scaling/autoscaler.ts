import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';
import type { ReportChecker } from '../../common/redis/load-reports.js';
import { redisChannels, redisKeys } from '../../common/redis/schema.js';
import type { Model, ModelGateway } from '../../common/resources/model.js';
import {
  parseLoadField,
  scalingOf,
  loadReportSchema,
  type WakeRequest,
} from '../../common/resources/model-scaling.js';
import { servedVersions, type ServedVersion } from '../../common/resources/model-versions.js';
import type { OwnedSource } from '../framework/controller.js';
import { refKey, type ResourceRef, type WatchedSource } from '../framework/resource-source.js';
import { decide, initialState, type ScaleState } from './decide.js';

/** A gateway's report older than this is a gateway gone: its load no longer counts. */
const REPORT_FRESH_MS = 5_000;
/**
 * A load hash holds a field per gateway replica or sidecar and version (a report is ~200 bytes):
 * past these it holds what no reports make.
 */
const MAX_LOAD_FIELDS = 2_048;
const MAX_LOAD_BYTES = 2 * 1024 * 1024;
/** A model's oversize load hash is told of at most this often. */
const OVERSIZE_WARN_MS = 60_000;

export interface AutoscalerOptions {
  models: WatchedSource<Model>;
  redis: Redis;
  /** A connection of its own for the wake-up channel (a subscribed connection runs no commands). */
  subscriber?: Redis;
  log: Logger;
  /** Which load reports to believe: the central gateways' and the model's own namespace's. */
  reports: ReportChecker;
  /** Where a Model without spec.gateway has its calls checked (the chart's models.gateway). */
  defaultGateway?: ModelGateway;
  tickMs?: number;
  now?: () => number;
}

/**
 * The replicas of each version of every Model with spec.scaling, from the calls in flight the
 * gateways report in Redis (they see every call), and at once when a gateway holds a call for a
 * version at zero (the wake-up channel). The Model reconciler asks it for the replicas of a plan;
 * a changed decision enqueues the Model, as a change of an owned object does.
 */
export class Autoscaler implements OwnedSource {
  private readonly states = new Map<string, ScaleState>();
  private onChange: (ref: ResourceRef) => void = () => undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private readonly now: () => number;
  /** Wake-up calls not yet decided on. */
  private wakes: WakeRequest[] = [];
  /** When each model's oversize load hash was last told of. */
  private readonly warned = new Map<string, number>();

  constructor(private readonly opts: AutoscalerOptions) {
    this.now = opts.now ?? Date.now;
  }

  async start(onChange: (owner: ResourceRef) => void): Promise<void> {
    this.onChange = onChange;
    const sub = this.opts.subscriber;
    if (sub !== undefined) {
      sub.on('message', (channel: string, message: string) => {
        if (channel === redisChannels.modelWake) this.wake(message);
      });
      sub.on('error', (err: Error) => this.opts.log.debug({ err }, 'wake-up channel'));
      // Subscribed again on every (re)connect; a lazy connection is opened here.
      sub.on('ready', () => void sub.subscribe(redisChannels.modelWake).catch(() => undefined));
      if (sub.status === 'ready') await sub.subscribe(redisChannels.modelWake).catch(() => undefined);
      else if (sub.status === 'wait') void sub.connect().catch(() => undefined);
    }
    this.timer = setInterval(() => void this.tick(), this.opts.tickMs ?? 1_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
    this.opts.subscriber?.disconnect();
  }

  /** The replicas a version's workload should run now. */
  replicasFor(model: Model, version: ServedVersion): number {
    const policy = scalingOf(model.spec);
    if (policy === undefined) return model.spec.replicas ?? 1;
    const key = this.keyOf(model, version);
    let state = this.states.get(key);
    if (state === undefined) {
      state = initialState(policy, this.now());
      this.states.set(key, state);
    }
    return state.replicas;
  }

  /**
   * A version has replicas but none ready yet (a new Model, a wake-up, a restart): it is not idle
   * while it starts, so the idle window counts from when it can answer.
   */
  noteStarting(model: Model, version: ServedVersion): void {
    const state = this.states.get(this.keyOf(model, version));
    if (state !== undefined)
      this.states.set(this.keyOf(model, version), { ...state, lastActive: this.now() });
  }

  /** Forgets a deleted Model's versions. */
  forget(ref: ResourceRef): void {
    const prefix = `${refKey(ref)}|`;
    for (const key of this.states.keys()) if (key.startsWith(prefix)) this.states.delete(key);
  }

  private keyOf(model: Model, version: ServedVersion): string {
    return `${refKey({ namespace: model.metadata.namespace ?? 'default', name: model.metadata.name })}|${version.name ?? ''}`;
  }

  /** One pass over every scaled Model: each gateway's fresh reports summed per version, then decided. */
  private tick(): Promise<void> {
    this.ticking ??= this.evaluate()
      .catch((err: unknown) => this.opts.log.warn({ err }, 'autoscaler pass failed; trying again'))
      .finally(() => {
        this.ticking = undefined;
        // A wake-up that came during the pass is decided at once, not at the next tick.
        if (this.wakes.length > 0) void this.tick();
      });
    return this.ticking;
  }

  private async evaluate(): Promise<void> {
    const now = this.now();
    const wakes = this.wakes;
    this.wakes = [];
    let failed: unknown;
    for (const model of this.opts.models.list()) {
      try {
        await this.evaluateModel(model, now, wakes);
      } catch (err) {
        // One model's reports that cannot be read hold back no other model's decision.
        failed ??= err;
      }
    }
    if (failed !== undefined) throw failed;
  }

  private async evaluateModel(model: Model, now: number, wakes: readonly WakeRequest[]): Promise<void> {
    const policy = scalingOf(model.spec);
    if (policy === undefined || model.metadata.deletionTimestamp) return;
    const versions = servedVersions(model.metadata.name, model.spec);
    // Not planned yet (or not this Model's name to serve): nothing to decide, nothing to read.
    if (!versions.some((v) => this.states.has(this.keyOf(model, v)))) return;
    const load = await this.loadOf(model, now);
    let changed = false;
    for (const version of versions) {
      const key = this.keyOf(model, version);
      const before = this.states.get(key);
      if (before === undefined) continue; // not planned yet: the reconciler starts it
      const woken = wakes.some(
        (w) =>
          w.model === model.metadata.name &&
          (w.version === (version.name ?? '') ||
            (w.version === '' && (version.percent > 0 || version.cohort !== undefined))),
      );
      // No reading (a load hash too large to read): what runs stays, but a call held at zero
      // still wakes its version.
      if (load === undefined && !(woken && before.replicas === 0)) continue;
      const after = decide(policy, before, load?.get(version.name ?? '') ?? 0, now, woken);
      this.states.set(key, after);
      if (after.replicas !== before.replicas) {
        changed = true;
        this.opts.log.info(
          { model: model.metadata.name, version: version.name, from: before.replicas, to: after.replicas },
          'scaling',
        );
      }
    }
    if (changed)
      this.onChange({ namespace: model.metadata.namespace ?? 'default', name: model.metadata.name });
  }

  /**
   * Mean calls in flight per version, summed over the gateways whose report is fresh and signed
   * by a central gateway or a sidecar of the model's own namespace (no other team's hand);
   * undefined when a load hash holds more than any reports make (none of it is read). The
   * sidecars' hash, which any team's sidecar user may write, is read only for a model guarded by
   * sidecars: a model the central gateways alone serve has none, and junk there changes nothing.
   */
  private async loadOf(model: Model, now: number): Promise<Map<string, number> | undefined> {
    const out = new Map<string, number>();
    const name = model.metadata.name;
    const bySidecars = (model.spec.gateway ?? this.opts.defaultGateway ?? 'central') === 'sidecar';
    const keys = [redisKeys.modelLoad(name), ...(bySidecars ? [redisKeys.sidecarModelLoad(name)] : [])];
    if (!(await this.readable(model, keys))) return undefined;
    const answers = (await this.opts.redis.pipeline(keys.map((k) => ['hgetall', k])).exec()) ?? [];
    const reports = keys.flatMap((redisKey, i) => {
      const [err, fields] = answers[i] ?? [null, {}];
      if (err) throw err;
      return Object.entries(fields as Record<string, string>).map(([field, raw]) => ({
        redisKey,
        field,
        raw,
      }));
    });
    for (const { redisKey, field, raw } of reports) {
      const where = parseLoadField(field);
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        continue;
      }
      // A sidecar's user may write any field here (a `null`, a string): what is not a report is skipped.
      const read = loadReportSchema.safeParse(parsed);
      if (!read.success || where === undefined) continue;
      const report = read.data;
      if (!(now - report.at < REPORT_FRESH_MS)) continue;
      if (!this.opts.reports.believes(redisKey, field, report, model.metadata.namespace ?? 'default')) {
        this.opts.log.debug(
          { model: model.metadata.name, field },
          'load report not believed (not signed for it)',
        );
        continue;
      }
      out.set(where.version, (out.get(where.version) ?? 0) + report.concurrency);
    }
    return out;
  }

  /**
   * Whether the load hashes `keys` are of a size reports make. Sidecars write theirs with a
   * password their team can read, under any model's name, and this is read every tick: a hash
   * grown to megabytes would be sent and parsed every second, holding Redis and the operator for
   * everyone. One past the bounds is not read (nor removed: the model's own reports are in it too),
   * and the model's replicas stay as they are until it is back within them.
   */
  private async readable(model: Model, keys: readonly string[]): Promise<boolean> {
    const sizes =
      (await this.opts.redis
        .pipeline(
          keys.flatMap((k) => [
            ['hlen', k],
            ['memory', 'usage', k, 'SAMPLES', '0'],
          ]),
        )
        .exec()) ?? [];
    for (const [i, key] of keys.entries()) {
      const [lenErr, fields] = sizes[2 * i] ?? [null, 0];
      if (lenErr) throw lenErr;
      // Exact (every field counted), and cheap once the fields are few. A Redis that refuses
      // MEMORY (a proxy, a managed service) is judged by its field count alone.
      const [memErr, bytes] = sizes[2 * i + 1] ?? [null, 0];
      const size = memErr ? 0 : Number(bytes ?? 0);
      if (Number(fields) <= MAX_LOAD_FIELDS && size <= MAX_LOAD_BYTES) continue;
      const name = model.metadata.name;
      if ((this.warned.get(name) ?? -Infinity) <= this.now() - OVERSIZE_WARN_MS) {
        this.warned.set(name, this.now());
        this.opts.log.warn(
          { model: name, key, fields: Number(fields), bytes: size },
          "a load hash holds more than any reports make: not read, and the model's replicas stay as they are",
        );
      }
      return false;
    }
    return true;
  }

  /** A gateway holds a call for a version at zero: decide now rather than at the next tick. */
  private wake(message: string): void {
    let request: WakeRequest;
    try {
      request = JSON.parse(message) as WakeRequest;
    } catch {
      return;
    }
    if (typeof request.model !== 'string' || typeof request.version !== 'string') return;
    this.wakes.push({ model: request.model, version: request.version });
    if (this.ticking === undefined) void this.tick();
  }
}
