import type { Logger } from '../common/logger.js';

/**
 * SIGTERM or SIGINT runs `shutdown` once (finishing in-flight requests), then exits: 0 when it
 * completed, 1 when it failed.
 */
export function stopOnSignals(log: Logger, what: string, shutdown: () => Promise<void>): void {
  const stop = (signal: string): void => {
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    shutdown().then(
      () => {
        log.info(`${what} stopped`);
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
