import type { Logger } from '../common/logger.js';

/** Something a gateway process runs beside its calls: a flush timer, a subscription, a pool. */
export interface BackgroundService {
  start?(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/**
 * The gateway's background services, started in the order they were added and stopped in the
 * reverse one (controller-runtime's manager of Runnables): what a service flushes as it stops
 * still finds the connections it was started after. A service that fails to stop is logged and
 * the rest still stop, so shutdown never leaves a timer or a socket behind.
 */
export class Background {
  private readonly services: Array<{ name: string; service: BackgroundService }> = [];

  constructor(private readonly log: Logger) {}

  add<T extends BackgroundService>(name: string, service: T): T {
    this.services.push({ name, service });
    return service;
  }

  async start(): Promise<void> {
    for (const { service } of this.services) await service.start?.();
  }

  async stop(): Promise<void> {
    for (const { name, service } of [...this.services].reverse()) {
      try {
        await service.stop();
      } catch (err) {
        this.log.warn({ err, service: name }, 'background service did not stop cleanly');
      }
    }
  }
}
