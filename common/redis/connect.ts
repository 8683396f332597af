import { Redis, type RedisOptions } from 'ioredis';
import { z } from 'zod';

/**
 * Every Redis connection Tollgate makes goes through here, so every part of it (gateway, sidecar,
 * operator, CLI, standalone) speaks the same URLs:
 *
 *   redis://[user:password@]host:port[/db]          one server
 *   rediss://...                                    the same over TLS
 *   redis+sentinel://[user:password@]s1:26379,s2:26379,s3:26379/<primary-name>[/db]
 *   rediss+sentinel://...                           Sentinel-managed, TLS to the data nodes
 *
 * With Sentinel, ioredis asks the Sentinels for the current primary and follows failovers. The
 * user and password are the data nodes' (an ACL user); `sentinelPassword` in the query, if the
 * Sentinels require one. Secrets travel inside the URL, which the chart keeps in a Secret.
 */
const SCHEMES = ['redis:', 'rediss:', 'redis+sentinel:', 'rediss+sentinel:'];

export const redisUrlSchema = z
  .string()
  .min(1)
  .refine((url) => parseRedisUrl(url) !== undefined, {
    message:
      'a Redis URL is redis://host:port, rediss://host:port (TLS) or redis+sentinel://s1:26379,s2:26379/<primary-name>',
  });

interface Parsed {
  options: RedisOptions;
  /** For a single server, ioredis takes the URL itself. */
  url?: string;
}

function parseRedisUrl(url: string): Parsed | undefined {
  const scheme = /^([a-z+]+:)\/\//.exec(url)?.[1];
  if (scheme === undefined || !SCHEMES.includes(scheme)) return undefined;
  if (!scheme.includes('+sentinel')) {
    try {
      const u = new URL(url);
      if (u.hostname === '') return undefined;
    } catch {
      return undefined;
    }
    return { url, options: {} };
  }
  // WHATWG URLs hold one host: the Sentinel list is parsed by hand.
  const m = /^[a-z+]+:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?]+)\/([^/?]+)(?:\/(\d+))?(?:\?(.*))?$/.exec(url);
  if (m === null) return undefined;
  const [, user, password, hosts = '', name = '', db, query] = m;
  const sentinels: Array<{ host: string; port: number }> = [];
  for (const hp of hosts.split(',')) {
    const hm = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hp);
    if (hm === null) return undefined;
    const port = Number(hm[2] ?? 26379);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
    sentinels.push({ host: (hm[1] ?? '').replace(/^\[|\]$/g, ''), port });
  }
  const params = new URLSearchParams(query ?? '');
  const tls = scheme.startsWith('rediss');
  const options: RedisOptions = {
    sentinels,
    name: decodeURIComponent(name),
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
    ...(db === undefined ? {} : { db: Number(db) }),
    ...(params.get('sentinelPassword') ? { sentinelPassword: params.get('sentinelPassword') ?? '' } : {}),
    ...(params.get('sentinelUsername') ? { sentinelUsername: params.get('sentinelUsername') ?? '' } : {}),
    ...(tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
  };
  return { options };
}

/** A connection to the Redis `url` names, with `options` (timeouts, queueing) on top. */
export function connectRedis(url: string, options: RedisOptions = {}): Redis {
  const parsed = parseRedisUrl(url);
  if (parsed === undefined) throw new Error(`not a Redis URL: ${redactRedisUrl(url)}`);
  return parsed.url !== undefined
    ? new Redis(parsed.url, options)
    : new Redis({ ...parsed.options, ...options });
}

/** The URL without its password, for messages and logs. */
export function redactRedisUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
