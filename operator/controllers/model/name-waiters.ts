import type { Model } from '../../../common/resources/model.js';
import type { OwnedSource } from '../../framework/controller.js';
import type { ResourceRef, ResourceSource } from '../../framework/resource-source.js';

/**
 * Wakes the Models waiting for a name (refused NameTaken) when it may have come free: their holder
 * deleted, and again when the time its namespace keeps the name is up. Without it they would
 * have to look again and again, each look a reconcile on workers every team shares.
 */
export class NameWaiters implements OwnedSource {
  private onChange: ((ref: ResourceRef) => void) | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly models: ResourceSource<Model>) {}

  start(onChange: (ref: ResourceRef) => void): Promise<void> {
    this.onChange = onChange;
    return Promise.resolve();
  }

  stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.onChange = undefined;
    return Promise.resolve();
  }

  /** Every other Model named `name`, now, and again at `also` (epoch ms) if given. */
  wake(name: string, from: ResourceRef, also?: number): void {
    this.tell(name, from);
    if (also === undefined) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        this.tell(name, from);
      },
      Math.max(0, also - Date.now()),
    );
    timer.unref();
    this.timers.add(timer);
  }

  private tell(name: string, from: ResourceRef): void {
    for (const m of this.models.list()) {
      const namespace = m.metadata.namespace ?? 'default';
      if (m.metadata.name === name && namespace !== from.namespace) this.onChange?.({ namespace, name });
    }
  }
}
