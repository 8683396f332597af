import type { Model } from '../../../common/resources/model.js';
import type { ResourceRef, ResourceSource } from '../../framework/resource-source.js';
import type { KeptNameStore } from './kept-names.js';
import { NameWaiters } from './name-waiters.js';
import { ModelNames, type NameHolder } from './names.js';

export const MODEL_FINALIZER = 'tollgate.dev/model-routes';
/**
 * How often a Model refused for its name looks again whether the holder is gone, besides being
 * woken when it goes (name-waiters.ts): a safety net, not the way it learns.
 */
const NAME_RECHECK_MS = 60_000;
/** A Model waiting for a name kept for a deleted holder's namespace looks again this long after its end. */
const KEPT_NAME_GRACE_MS = 100;

/**
 * The names part of the Model reconciler: which namespace holds each model name (names.ts), the
 * names kept for deleted Models' namespaces across restarts, and the Models waiting for a name,
 * woken when it may have come free.
 */
export class NameOwnership {
  readonly names = new ModelNames(MODEL_FINALIZER);
  /** An owned source of the reconciler: it wakes the Models that wait. */
  readonly waiters: NameWaiters;
  /** Models refused for their name whose leftovers this process has torn down (once is enough). */
  private readonly tornDown = new Set<string>();
  private keptLoad: Promise<void> | undefined;

  constructor(
    private readonly models: ResourceSource<Model>,
    private readonly kept: KeptNameStore,
  ) {
    this.waiters = new NameWaiters(models);
  }

  /**
   * The names an earlier process kept for deleted Models' namespaces, read once before any Model
   * is reconciled; while Redis cannot be read, every reconcile fails and is retried (the other
   * controllers run on).
   */
  loaded(): Promise<void> {
    this.keptLoad ??= this.kept.load().then(
      (all) => {
        for (const kept of all) this.names.restore(kept);
      },
      (e: unknown) => {
        this.keptLoad = undefined;
        throw e;
      },
    );
    return this.keptLoad;
  }

  /** Who holds the Model's name, when it is not the Model itself. */
  holder(model: Model): NameHolder | undefined {
    return this.names.holder(this.models.list(), model);
  }

  /** When a Model refused for its name looks again: the kept name's end, or the safety net. */
  recheckMs(holder: NameHolder): number {
    const keptFor =
      holder.keptUntil === undefined ? NAME_RECHECK_MS : holder.keptUntil.getTime() - Date.now();
    return Math.min(NAME_RECHECK_MS, Math.max(0, keptFor) + KEPT_NAME_GRACE_MS);
  }

  /** Whether the leftovers of a Model refused for its name are still to be torn down in this process. */
  leftovers(key: string): boolean {
    return !this.tornDown.has(key);
  }

  /** Its leftovers are gone: nothing makes any of them again while it is refused. */
  clearedLeftovers(key: string): void {
    this.tornDown.add(key);
  }

  /**
   * A Model with the finalizer being deleted: its name is kept for its namespace, where the next
   * operator finds it, before the Model (and this pass) can be gone.
   */
  async release(model: Model): Promise<{ until: number } | undefined> {
    const kept = this.names.release(this.models.list(), model);
    if (kept !== undefined) await this.kept.keep(kept);
    return kept;
  }

  /** Others waiting for the name are told now (and again at `keptUntil`, when its time is up). */
  wake(ref: ResourceRef, keptUntil?: number): void {
    this.waiters.wake(ref.name, ref, keptUntil === undefined ? undefined : keptUntil + KEPT_NAME_GRACE_MS);
  }

  /** The Model holds its name again, or is gone: a later refusal tears its leftovers down again. */
  forget(key: string): void {
    this.tornDown.delete(key);
  }
}
