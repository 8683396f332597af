import type { Redis } from 'ioredis';
import { redisChannels } from '../../common/redis/schema.js';
import type { Route } from '../../common/resources/grant.js';

// Write only when the value changes, and announce it in the same script, so a reconcile that finds
// nothing new costs one round trip and no gateway cache is invalidated for nothing.
const PUT = `
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1`;

// Delete only the route this source wrote: two resources must not remove each other's route.
const REMOVE = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local ok, route = pcall(cjson.decode, cur)
if ok and type(route) == 'table' and route.source ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], KEYS[1])
return 1`;

/** The Redis route table as the operator writes it (derived state: rebuilt from resources). */
export class RouteTable {
  constructor(private readonly redis: Redis) {}

  /** Sets the route at `key`; true if it changed. */
  async put(key: string, route: Route): Promise<boolean> {
    return (await this.redis.eval(PUT, 1, key, JSON.stringify(route), redisChannels.routes)) === 1;
  }

  /** Removes the route at `key` if `source` wrote it; true if one was removed. */
  async remove(key: string, source: string): Promise<boolean> {
    return (await this.redis.eval(REMOVE, 1, key, source, redisChannels.routes)) === 1;
  }
}
