import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { redisChannels, redisKeys, routeChangeTag } from '../../common/redis/schema.js';
import { InvalidatedCache, type CacheInvalidation } from '../invalidation.js';
import { sendAgainOnConnectionLoss } from '../proxy/send-again.js';
import type { UpstreamPools } from '../proxy/upstream-pools.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { headersPerTry, withSignedGrant, type GrantSigner } from '../auth/signed-grant.js';
import { modelMetadataSchema, type ModelMetadata } from './metadata.js';
import { readLimited } from './http.js';
import { runtimeUnreachable } from './runtime-errors.js';
import type { RuntimeAddress } from '../routing/route-table.js';

/** A model's metadata, parsed for the validator and as the runtime sent it, for GET /v2/models/<m>. */
export interface CachedMetadata {
  metadata: ModelMetadata;
  raw: Buffer;
  /** Where it was fetched from: a different address means a different runtime. */
  address: string;
}

/**
 * A model's schema changes only when the model is redeployed, which the operator announces on the
 * routes channel; the TTL covers a redeploy behind an unchanged URL (a Kubernetes Service).
 */
const TTL_MS = 30_000;
const MAX_METADATA_BYTES = 1024 * 1024;
/**
 * What all models' metadata may take in memory: the runtime, which runs its team's code, chooses
 * its metadata's size (up to MAX_METADATA_BYTES), and a team may run many models. A model whose
 * metadata (all its versions') would take more than a 16th of it is not kept: fetched for each of
 * its own calls, it pushes no other team's model out.
 */
const MAX_CACHED_BYTES = 128 * 1024 * 1024;
/** An entry's memory: its text, and what parsing it made (measured at about three times it). */
const bytesOf = (known: ReadonlyMap<string, CachedMetadata>): number => {
  let bytes = 0;
  for (const entry of known.values()) bytes += 4 * entry.raw.length;
  return bytes;
};

/**
 * Model metadata from the runtime's GET /v2/models/<name>, cached per model and dropped when the
 * model's route changes. Concurrent misses share one fetch.
 */
export class MetadataCache {
  /** Per model, each runtime's metadata by address (a model's versions answer at different ones). */
  private readonly cache: InvalidatedCache<ReadonlyMap<string, CachedMetadata>>;
  private readonly inflight = new Map<string, Promise<CachedMetadata>>();
  /** Each cached model's name by the change tag of its route. */
  private readonly modelOfTag = new Map<string, string>();

  constructor(
    private readonly upstreams: UpstreamPools,
    private readonly signer: GrantSigner | undefined,
    invalidation: CacheInvalidation,
    private readonly log: Logger,
    entries: number,
  ) {
    this.cache = new InvalidatedCache<ReadonlyMap<string, CachedMetadata>>(invalidation, {
      max: entries,
      ttlMs: TTL_MS,
      weigh: { maxBytes: MAX_CACHED_BYTES, maxEntryBytes: MAX_CACHED_BYTES / 16, bytesOf },
    });
    // Messages on the routes channel carry the change tag of the route that changed.
    invalidation.on(redisChannels.routes, (tag) => {
      const model = this.modelOfTag.get(tag);
      this.modelOfTag.delete(tag);
      this.cache.delete(model);
    });
  }

  /** `grant`: the caller's, which a sidecar in front of the runtime must see signed. */
  get(model: string, runtime: RuntimeAddress, grant: KeyGrant): Promise<CachedMetadata> | CachedMetadata {
    const address = runtime.origin + runtime.basePath;
    const hit = this.cache.get(model)?.get(address);
    if (hit !== undefined) return hit;
    const key = `${model} ${address}`;
    let pending = this.inflight.get(key);
    if (pending === undefined) {
      pending = this.fetch(model, runtime, address, grant).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /** Forgets a model's metadata, e.g. after its runtime refused a request the metadata allowed. */
  forget(model: string): void {
    this.cache.delete(model);
  }

  private async fetch(
    model: string,
    runtime: RuntimeAddress,
    address: string,
    grant: KeyGrant,
  ): Promise<CachedMetadata> {
    const epoch = this.cache.epoch;
    const path = `${runtime.basePath}/v2/models/${encodeURIComponent(model)}`;
    const headers = await headersPerTry(() =>
      withSignedGrant(this.signer, ['accept', 'application/json'], grant, runtime.grantAudience, {
        method: 'GET',
        target: path,
      }),
    );
    let status: number;
    let raw: Buffer;
    let over: boolean;
    try {
      // Fetched on a model's first call, often the one that woke it from zero: a refused
      // connection is waited out as the call itself would be.
      const res = await sendAgainOnConnectionLoss(async () =>
        this.upstreams.request(runtime.origin, { method: 'GET', path, headers: await headers() }),
      );
      status = res.statusCode;
      // Read no further than what the gateway would keep: the runtime runs the model's code.
      const read = await readLimited(res.body, MAX_METADATA_BYTES);
      raw = read.bytes;
      over = read.over;
    } catch (err) {
      throw runtimeUnreachable(model, err as Error);
    }
    if (status === 404) {
      throw new TollgateError(
        'model_not_ready',
        `model '${model}' is not loaded by its runtime yet; retry shortly`,
        {
          headers: { 'retry-after': '1' },
        },
      );
    }
    const parsed = status === 200 && !over ? modelMetadataSchema.safeParse(parseJson(raw)) : undefined;
    if (parsed?.success !== true) {
      this.log.error(
        { model, status, over, issue: parsed?.error.issues[0]?.message },
        'unreadable model metadata',
      );
      throw new TollgateError(
        'model_metadata_unavailable',
        over
          ? `the runtime of model '${model}' answered its V2 metadata with more than ${MAX_METADATA_BYTES} bytes`
          : `the runtime of model '${model}' did not give readable V2 metadata (status ${status})`,
      );
    }
    const entry = { metadata: parsed.data, raw, address };
    const known = new Map(this.cache.get(model));
    known.set(address, entry);
    // Only models whose route led here are cached: the map holds no more names than there are models.
    if (this.cache.set(model, known, epoch))
      this.modelOfTag.set(routeChangeTag(redisKeys.modelRoute(model)), model);
    return entry;
  }
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}
