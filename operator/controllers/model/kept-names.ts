import type { Redis } from 'ioredis';
import { z } from 'zod';
import { redisKeys } from '../../../common/redis/schema.js';
import { scanValues } from '../../../common/redis/scan-values.js';
import type { EntrySealer, EntryVerifier } from '../../../common/redis/sealed-entry.js';
import { parseStored } from '../../../common/resources/grant.js';
import type { KeptName } from './names.js';

/** Where the names kept for deleted Models' namespaces outlive the operator process that kept them. */
export interface KeptNameStore {
  keep(kept: KeptName): Promise<void>;
  /** Every name still kept, sealed by the operator: read before a term's first Model reconcile. */
  load(): Promise<KeptName[]>;
}

const keptSchema = z.strictObject({
  namespace: z.string().min(1),
  until: z.number().int().positive(),
  since: z.number().int().nonnegative(),
});

/**
 * In Redis, sealed as every entry the operator writes (whoever else may write Redis cannot give a
 * name to a namespace), with the time left as its TTL: Redis forgets it when the keeping ends.
 */
export class RedisKeptNames implements KeptNameStore {
  constructor(
    private readonly redis: Redis,
    private readonly sealer: EntrySealer,
    private readonly verifier: EntryVerifier,
  ) {}

  async keep({ name, ...kept }: KeptName): Promise<void> {
    const left = kept.until - Date.now();
    if (left <= 0) return;
    const key = redisKeys.keptModelName(name);
    await this.redis.set(key, await this.sealer.seal(key, JSON.stringify(kept)), 'PX', left);
  }

  async load(): Promise<KeptName[]> {
    const prefix = redisKeys.keptModelName('');
    const found: KeptName[] = [];
    const now = Date.now();
    await scanValues(this.redis, `${prefix}*`, (key, value) => {
      const opened = this.verifier.open(key, value);
      const kept = opened.ok ? parseStored(keptSchema, opened.payload) : undefined;
      // Past its time (Redis expires it a moment later, or it was put back): kept no more.
      if (kept?.ok === true && kept.value.until > now)
        found.push({ name: key.slice(prefix.length), ...kept.value });
    });
    return found;
  }
}
