import type { Redis } from 'ioredis';
import type { Logger } from '../../common/logger.js';

/** How often the offset from Redis's clock is measured again. */
const EVERY_MS = 10_000;

/**
 * Redis's clock, as every replica reads it: the rate limits' windows and the credits' periods
 * start and end by it, so a replica whose own clock runs a second ahead does not restart a window
 * early (and admit a window's worth more). Measured with TIME every ten seconds, half the round
 * trip taken off; until the first answer (or if TIME is refused) the replica's own clock stands in,
 * as a limit is better counted on a slightly wrong clock than not at all.
 */
export class RedisClock {
  private offsetMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private warned = false;

  constructor(
    private readonly redis: Pick<Redis, 'time'>,
    private readonly log: Logger,
    /** This replica's own clock. */
    private readonly local: () => number = Date.now,
  ) {}

  now(): number {
    return this.local() + this.offsetMs;
  }

  /** The offset now and every EVERY_MS; resolves once the first measurement is in (or failed). */
  async start(): Promise<void> {
    this.timer ??= setInterval(() => void this.measure(), EVERY_MS);
    this.timer.unref();
    await this.measure();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Measures the offset once (tests; the timer does it every EVERY_MS). */
  async measure(): Promise<void> {
    try {
      const sent = this.local();
      const [seconds, micros] = await this.redis.time();
      const received = this.local();
      const redisMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      this.offsetMs = Math.round(redisMs - (sent + received) / 2);
    } catch (err) {
      if (this.warned) return;
      this.warned = true;
      this.log.warn(
        { err },
        "Redis's clock could not be read (TIME); the limits' windows follow this replica's",
      );
    }
  }
}
