import type { Redis } from 'ioredis';
import { readKeyUsage, type KeyUsage } from '../common/apikey/usage.js';
import type { Logger } from '../common/logger.js';
import { apiKeyId } from '../common/resources/apikey.js';
import type { ApiKeyResource } from './controllers/apikey-controller.js';
import { ConflictError, GoneError, type ResourceSource } from './framework/resource-source.js';

/** Keys whose usage is read in one Redis round trip. */
const READ_BATCH = 500;
/** Status writes per pass at most: a burst of first uses cannot flood the API server. */
const MAX_WRITES_PER_PASS = 200;

/**
 * Copies each key's usage, as the gateway counts it in Redis (`tg:usage:<id>`), into its ApiKey
 * status (`lastUsed`, `requestCount`), so `kubectl get apikeys` shows Last Used. Only statuses that
 * changed are written, at most MAX_WRITES_PER_PASS a pass; the rest wait for the next pass.
 */
export class UsageStatusSync {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly keys: ResourceSource<ApiKeyResource>,
    private readonly redis: Redis,
    private readonly log: Logger,
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.syncOnce(), intervalMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass; resolves with the number of statuses written. Passes never overlap. */
  syncOnce(): Promise<number> {
    this.running ??= this.pass()
      .catch((err: unknown) => {
        this.log.warn({ err }, 'key usage not copied to ApiKey status; retrying on the next pass');
        return 0;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<number> {
    const keys = this.keys.list();
    let written = 0;
    /** Writes tried, refused ones included: the cap bounds the API server's load either way. */
    let tried = 0;
    let failed: { key: string; err: unknown; count: number } | undefined;
    for (let i = 0; i < keys.length && tried < MAX_WRITES_PER_PASS; i += READ_BATCH) {
      const batch = keys.slice(i, i + READ_BATCH);
      const usage = await readKeyUsage(
        this.redis,
        batch.map((k) => apiKeyId(k)),
      );
      for (const key of batch) {
        const used = usage.get(apiKeyId(key));
        if (used === undefined || !changed(key, used)) continue;
        if (tried >= MAX_WRITES_PER_PASS) break;
        tried++;
        try {
          if (await this.write(key, used)) written++;
        } catch (err) {
          // One key's status refused (or lost) must not hold back every key after it.
          failed = {
            key: `${key.metadata.namespace}/${key.metadata.name}`,
            err,
            count: (failed?.count ?? 0) + 1,
          };
        }
      }
    }
    if (failed !== undefined)
      this.log.warn(
        { err: failed.err, key: failed.key, failed: failed.count },
        'some ApiKey statuses were not written; retrying on the next pass',
      );
    return written;
  }

  private async write(key: ApiKeyResource, used: KeyUsage): Promise<boolean> {
    const status = {
      ...key.status,
      requestCount: used.count,
      ...(used.lastUsed ? { lastUsed: used.lastUsed } : {}),
    };
    try {
      await this.keys.updateStatus({ ...key, status });
      return true;
    } catch (e) {
      // Changed or deleted meanwhile: the next pass reads the new object.
      if (e instanceof ConflictError || e instanceof GoneError) return false;
      throw e;
    }
  }
}

const changed = (key: ApiKeyResource, used: KeyUsage): boolean =>
  key.status?.requestCount !== used.count ||
  (used.lastUsed !== undefined && key.status?.lastUsed !== used.lastUsed);
