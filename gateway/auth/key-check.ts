import type { CallHead } from '../http/call-head.js';
import type { Redis } from 'ioredis';
import { hashKey } from '../../common/apikey/format.js';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { keyChangeTag, redisChannels, redisKeys } from '../../common/redis/schema.js';
import { keyGrantSchema, parseStored, type KeyGrant } from '../../common/resources/grant.js';
import { InvalidatedCache, type CacheInvalidation } from '../invalidation.js';
import { authorizationOf, parseAuthorizationHeader } from './authorization-header.js';
import { indexRebuilding, redisUnavailable } from '../../common/redis/unavailable.js';
import { CidrAllowlist } from '../../common/net/cidr.js';
import { clientAddress, NO_PROXIES, type ProxyTrust } from '../http/client-address.js';
import type { RefusalSink } from './refusals.js';
import { inChildSpan, SpanKind } from '../../common/tracing/call-trace.js';
import { redisSpan } from '../tracing/call-attributes.js';
import type { EntryVerifier } from '../../common/redis/sealed-entry.js';

/** A value of another format that no imported key has: most likely a mistyped or foreign credential. */
function notImported(err: unknown): never {
  if (err instanceof TollgateError && err.code === 'unknown_api_key') {
    throw new TollgateError(
      'malformed_api_key',
      'this is not a Tollgate key (keys start with tgb_ or tgp_ followed by 36 letters and digits), nor an imported key that exists (an imported key works until it is deleted)',
    );
  }
  throw err;
}

/** The index entry as written by the keys code; checked here because Redis is outside our process. */
interface CachedGrant {
  grant: KeyGrant;
  /** keyChangeTag of the key's hash: what the keys channel names the key by. */
  tag: string;
  /** Epoch milliseconds; Infinity when the key does not expire. */
  expiresAtMs: number;
  /** Built once per cached entry: the check on every call is a lookup. */
  allowlist: CidrAllowlist | undefined;
}

/**
 * Turns an Authorization header into the key's grant. Shape errors are answered without I/O; a
 * well-formed key is looked up by its SHA-256 in an in-process cache (see CacheInvalidation for
 * when it is trusted) and otherwise in Redis. The key itself is never stored, cached or logged.
 */
export class KeyChecker {
  private readonly cache: InvalidatedCache<CachedGrant>;
  /** The hash of each cached key by its change tag; an entry leaves with its key's cached grant. */
  private readonly hashOfTag = new Map<string, string>();

  constructor(
    private readonly redis: Redis,
    /** Only entries the operator (or a central gateway) sealed grant anything. */
    private readonly verifier: EntryVerifier,
    invalidation: CacheInvalidation,
    private readonly log: Logger,
    cacheEntries: number,
    private readonly proxies: ProxyTrust = NO_PROXIES,
    /** Told of each refusal of a key that exists (expired, rolled, from a network it may not use). */
    private readonly onRefused: RefusalSink = () => undefined,
  ) {
    this.cache = new InvalidatedCache<CachedGrant>(invalidation, {
      max: cacheEntries,
      onDrop: (dropped) => this.hashOfTag.delete(dropped.tag),
    });
    // Messages on the keys channel carry the change tag of a key whose entry changed or was deleted.
    invalidation.on(redisChannels.keys, (tag) => this.cache.delete(this.hashOfTag.get(tag)));
  }

  /**
   * Resolves the grant of the request's key, or rejects with a 401 (credentials), a 403 (a client
   * address outside the key's allowlist) or a 503 (Redis) TollgateError.
   */
  check(req: CallHead): Promise<KeyGrant> | KeyGrant {
    const { key, module } = parseAuthorizationHeader(authorizationOf(req));
    const hash = hashKey(key);
    // A cached grant is only trusted while the command connection is up too: when Redis is down,
    // nothing passes.
    const cached = this.redis.status === 'ready' ? this.cache.get(hash) : undefined;
    if (cached !== undefined) return this.admitted(cached, req);
    const found = this.lookup(hash);
    return (module === undefined ? found.catch(notImported) : found).then((entry) =>
      this.admitted(entry, req),
    );
  }

  /** The grant of the key with this hash, if the index holds a sealed entry for it. */
  async grantOf(hash: string): Promise<KeyGrant | undefined> {
    try {
      return (this.cache.get(hash) ?? (await this.lookup(hash))).grant;
    } catch {
      return undefined;
    }
  }

  private async lookup(hash: string): Promise<CachedGrant> {
    const epoch = this.cache.epoch;
    let raw: string | null;
    let indexBuilt: string | null;
    try {
      // One round trip: the entry, and whether the index is known complete.
      [raw, indexBuilt] = (await inChildSpan('redis key lookup', SpanKind.CLIENT, redisSpan('MGET'), () =>
        this.redis.mget(redisKeys.apiKey(hash), redisKeys.indexMarker),
      )) as [string | null, string | null];
    } catch (err) {
      throw redisUnavailable(err);
    }
    if (raw === null) {
      if (indexBuilt === null) throw indexRebuilding();
      throw new TollgateError('unknown_api_key', 'this key does not exist or was deleted; create a new one');
    }
    const entry = this.toCached(raw, hash);
    if (this.cache.set(hash, entry, epoch)) this.hashOfTag.set(entry.tag, hash);
    return entry;
  }

  private toCached(raw: string, hash: string): CachedGrant {
    const opened = this.verifier.open(redisKeys.apiKey(hash), raw);
    const parsed = opened.ok ? parseStored(keyGrantSchema, opened.payload) : opened;
    if (!parsed.ok) {
      // A corrupt or forged index entry must not grant anything; the operator's rebuild repairs it.
      this.log.error(
        { keyHash: hash, issue: parsed.issue },
        'key index entry refused (corrupt or not sealed by Tollgate)',
      );
      throw new TollgateError('unknown_api_key', 'this key does not exist or was deleted; create a new one');
    }
    const grant: KeyGrant = parsed.value;
    const expiresAtMs = grant.expiresAt === undefined ? Infinity : Date.parse(grant.expiresAt);
    return {
      grant,
      tag: keyChangeTag(hash),
      expiresAtMs: Number.isNaN(expiresAtMs) ? -Infinity : expiresAtMs,
      allowlist: grant.allowedCidrs === undefined ? undefined : new CidrAllowlist(grant.allowedCidrs),
    };
  }

  private admitted(entry: CachedGrant, req: CallHead): KeyGrant {
    const refusal = this.refusal(entry, req);
    if (refusal === undefined) return entry.grant;
    this.onRefused(entry.grant, refusal.code, req);
    throw refusal;
  }

  private refusal(entry: CachedGrant, req: CallHead): TollgateError | undefined {
    const { grant } = entry;
    if (Date.now() >= entry.expiresAtMs) {
      if (grant.rolledTo !== undefined) {
        return new TollgateError(
          'rolled_api_key',
          `this key was rolled and its grace period ended at ${grant.expiresAt ?? ''}; use the key that replaced it (id ${grant.rolledTo})`,
        );
      }
      return new TollgateError('expired_api_key', 'this key has expired; create a new one');
    }
    if (grant.identity?.missing === true) {
      // Its identity's limits cannot be counted: the key is not let off them.
      return new TollgateError(
        'identity_missing',
        `this key belongs to the identity "${grant.identity.name}", which does not exist (deleted?) or is not the key owner's; the key's owner must create it again or make a key without it`,
      );
    }
    if (entry.allowlist === undefined) return undefined;
    const address = clientAddress(req, this.proxies);
    if (entry.allowlist.allows(address)) return undefined;
    return new TollgateError(
      'address_not_allowed',
      // The allowed networks are the owner's business, not the caller's: not named here.
      `this key may not be used from ${address ?? 'an unknown address'}; its owner must add that network to the key's allowedCidrs`,
    );
  }
}
