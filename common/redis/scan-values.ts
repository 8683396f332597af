import type { Redis } from 'ioredis';

const SCAN_COUNT = 1000;

/** Every value whose key matches `pattern`, page by page (SCAN, then one MGET a page). */
export async function scanValues(
  redis: Redis,
  pattern: string,
  visit: (key: string, value: string) => void,
): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    cursor = next;
    if (keys.length === 0) continue;
    const values = await redis.mget(...keys);
    keys.forEach((key, i) => {
      const value = values[i];
      if (value !== null && value !== undefined) visit(key, value);
    });
  } while (cursor !== '0');
}
