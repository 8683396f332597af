import { outsideCall } from '../common/tracing/call-trace.js';

/**
 * Writes a batch every `everyMs`, and on demand: calls that arrive while a write runs share it, so
 * two writes of one batch never overlap. What the gateway's buffered recorders (key usage, model
 * usage, the audit trail) each need.
 */
export class PeriodicFlush {
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly write: () => Promise<void>,
    private readonly everyMs: number,
  ) {}

  start(): void {
    // A failed write is the writer's to log and keep; the timer's flush must never throw.
    this.timer = outsideCall(() => setInterval(() => void this.flush().catch(() => undefined), this.everyMs));
    this.timer.unref();
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  flush(): Promise<void> {
    // Asked for by one call (the audit's settle), written for all: none of that call's.
    this.flushing ??= outsideCall(() => this.write()).finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }
}
