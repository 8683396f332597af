import { describe, expect, it } from '@jest/globals';
import { connectRedis, redactRedisUrl, redisUrlSchema } from '../../../common/redis/connect.js';

describe('Redis URLs', () => {
  it('accepts one server, TLS, ACL users and Sentinel groups', () => {
    for (const url of [
      'redis://127.0.0.1:6379',
      'rediss://cache.internal:6380/2',
      'redis://tollgate:s3cret@redis.svc:6379',
      'redis+sentinel://10.0.0.1:26379,10.0.0.2:26379,10.0.0.3/tollgate',
      'rediss+sentinel://gw:pw@s1:26379,s2:26379/tollgate/1?sentinelPassword=x',
      'redis+sentinel://[::1]:26379/tollgate',
    ]) {
      expect({ url, ok: redisUrlSchema.safeParse(url).success }).toEqual({ url, ok: true });
    }
  });

  it('refuses what is not one, saying which forms are', () => {
    for (const url of [
      'http://127.0.0.1:6379',
      'redis://',
      'redis+sentinel://s1:26379',
      'redis+sentinel://s1:99999/tollgate',
      'redis+sentinel://s1:26379,/tollgate',
      'localhost:6379',
    ]) {
      const parsed = redisUrlSchema.safeParse(url);
      expect({ url, ok: parsed.success }).toEqual({ url, ok: false });
      expect(parsed.error?.issues[0]?.message).toContain('redis+sentinel://');
    }
  });

  it('gives ioredis the Sentinels, the primary name and the data nodes’ credentials', () => {
    const r = connectRedis('rediss+sentinel://gw:p%40ss@s1:26379,s2/tollgate/3?sentinelPassword=sp', {
      lazyConnect: true,
    });
    try {
      expect(r.options).toMatchObject({
        sentinels: [
          { host: 's1', port: 26379 },
          { host: 's2', port: 26379 },
        ],
        name: 'tollgate',
        username: 'gw',
        password: 'p@ss',
        db: 3,
        sentinelPassword: 'sp',
        enableTLSForSentinelMode: true,
        lazyConnect: true,
      });
    } finally {
      r.disconnect();
    }
  });

  it('never prints a password', () => {
    expect(redactRedisUrl('redis://gw:s3cret@h:6379')).toBe('redis://gw:***@h:6379');
    expect(() => connectRedis('redis+sentinel://gw:s3cret@nowhere')).toThrow(/gw:\*\*\*@/);
  });
});
