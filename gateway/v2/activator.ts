import type { Redis } from 'ioredis';
import { TollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { redisChannels } from '../../common/redis/schema.js';
import type { WakeRequest } from '../../common/resources/model-scaling.js';

/** How often a held call looks whether a replica is ready (a route lookup, cached in process). */
const POLL_MS = 100;
/** A wake-up is sent again this often while calls wait (an operator may have missed the first). */
const REWAKE_MS = 2_000;

/**
 * Holds calls to a model version with no ready replica because it was scaled to zero (Knative's
 * activator): asks the operator for a replica on the wake-up channel, and lets the calls through
 * once one is ready. Calls that arrive together wait together, on one wake-up; past the model's
 * activation timeout they get 503 model_scaling_up with Retry-After.
 */
export class Activator {
  private readonly waiting = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
  ) {}

  /** Resolves once `warm()` says a replica is ready; `version` "" for an unversioned call. */
  hold(model: string, version: string, timeoutMs: number, warm: () => Promise<boolean>): Promise<void> {
    const key = `${model}|${version}`;
    let pending = this.waiting.get(key);
    if (pending === undefined) {
      pending = this.wait({ model, version }, timeoutMs, warm).finally(() => this.waiting.delete(key));
      this.waiting.set(key, pending);
    }
    return pending;
  }

  private async wait(request: WakeRequest, timeoutMs: number, warm: () => Promise<boolean>): Promise<void> {
    const started = Date.now();
    let woke = 0;
    for (;;) {
      if (Date.now() - woke >= REWAKE_MS) {
        woke = Date.now();
        await this.redis.publish(redisChannels.modelWake, JSON.stringify(request)).catch((err: unknown) => {
          this.log.warn({ err, model: request.model }, 'wake-up not sent; retrying');
        });
      }
      if (await warm()) {
        this.log.info({ ...request, waitedMs: Date.now() - started }, 'model woke up');
        return;
      }
      if (Date.now() - started >= timeoutMs) throw scalingUp(request, timeoutMs);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

function scalingUp(request: WakeRequest, timeoutMs: number): TollgateError {
  const what =
    request.version === ''
      ? `model '${request.model}'`
      : `version '${request.version}' of model '${request.model}'`;
  return new TollgateError(
    'model_scaling_up',
    `${what} is starting a replica (it was scaled to zero) and none was ready within ${Math.round(timeoutMs / 1000)} s; retry shortly`,
    { headers: { 'retry-after': '5' } },
  );
}
