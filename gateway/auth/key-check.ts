import type { Redis } from 'ioredis';
import { hashKey } from '../../common/apikey/format.js';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { redisChannels, redisKeys } from '../../common/redis/schema.js';
import { keyGrantSchema, parseStored, type KeyGrant } from '../../common/resources/grant.js';
import { InvalidatedCache, type CacheInvalidation } from '../invalidation.js';
import { parseAuthorizationHeader } from './authorization-header.js';
import { redisUnavailable } from '../../common/redis/unavailable.js';

/** The index entry as written by the keys code; checked here because Redis is outside our process. */
interface CachedGrant {
  grant: KeyGrant;
  /** Epoch milliseconds; Infinity when the key does not expire. */
  expiresAtMs: number;
}

/**
 * Turns an Authorization header into the key's grant. Shape errors are answered without I/O; a
 * well-formed key is looked up by its SHA-256 in an in-process cache (see CacheInvalidation for
 * when it is trusted) and otherwise in Redis. The key itself is never stored, cached or logged.
 */
export class KeyChecker {
  private readonly cache: InvalidatedCache<CachedGrant>;

  constructor(
    private readonly redis: Redis,
    invalidation: CacheInvalidation,
    private readonly log: Logger,
    cacheEntries: number,
  ) {
    this.cache = new InvalidatedCache<CachedGrant>(invalidation, { max: cacheEntries });
    // Messages on the keys channel carry the hash of a key whose entry changed or was deleted.
    invalidation.on(redisChannels.keys, (hash) => this.cache.delete(hash));
  }

  /** Resolves the grant, or rejects with a 401 (credentials) or 503 (Redis) TollgateError. */
  check(header: string | undefined): Promise<KeyGrant> | KeyGrant {
    const { key } = parseAuthorizationHeader(header);
    const hash = hashKey(key);
    // A cached grant is only trusted while the command connection is up too: when Redis is down,
    // nothing passes.
    const cached = this.redis.status === 'ready' ? this.cache.get(hash) : undefined;
    if (cached !== undefined) return this.unexpired(cached);
    return this.lookup(hash);
  }

  private async lookup(hash: string): Promise<KeyGrant> {
    const epoch = this.cache.epoch;
    let raw: string | null;
    try {
      raw = await this.redis.get(redisKeys.apiKey(hash));
    } catch (err) {
      throw redisUnavailable(err);
    }
    if (raw === null) {
      throw new TollgateError('unknown_api_key', 'this key does not exist or was deleted; create a new one');
    }
    const entry = this.toCached(raw, hash);
    this.cache.set(hash, entry, epoch);
    return this.unexpired(entry);
  }

  private toCached(raw: string, hash: string): CachedGrant {
    const parsed = parseStored(keyGrantSchema, raw);
    if (!parsed.ok) {
      // A corrupt index entry must not grant anything; the operator's rebuild repairs it.
      this.log.error({ keyHash: hash, issue: parsed.issue }, 'corrupt key index entry');
      throw new TollgateError('unknown_api_key', 'this key does not exist or was deleted; create a new one');
    }
    const grant: KeyGrant = parsed.value;
    const expiresAtMs = grant.expiresAt === undefined ? Infinity : Date.parse(grant.expiresAt);
    return { grant, expiresAtMs: Number.isNaN(expiresAtMs) ? -Infinity : expiresAtMs };
  }

  private unexpired(entry: CachedGrant): KeyGrant {
    if (Date.now() >= entry.expiresAtMs) {
      throw new TollgateError('expired_api_key', 'this key has expired; create a new one');
    }
    return entry.grant;
  }
}
