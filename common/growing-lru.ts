import { LRUCache } from 'lru-cache';

type Options<K extends object | string, V extends object | boolean> = Omit<
  LRUCache.Options<K, V, unknown>,
  'max' | 'maxSize' | 'sizeCalculation'
>;

/**
 * An LRU of at most `entries` entries whose memory grows with what it holds. lru-cache's `max`
 * allocates the whole capacity up front: 100,000 entries with a TTL are ~4 MiB before the first
 * one, paid by every gateway replica and every sidecar whether or not the entries ever come.
 * Bounded by count through `maxSize` instead, its arrays start empty.
 */
export function growingLru<K extends object | string, V extends object | boolean>(
  entries: number,
  opts: Options<K, V> = {},
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...opts, maxSize: entries, sizeCalculation: () => 1 });
}
