import { creationOrder } from '../../common/resources/claim-order.js';
import type { Model } from '../../common/resources/model.js';

/**
 * How long a deleted Model's namespace keeps its name: long enough for a Model deleted and made
 * again (`kubectl replace --force`, a GitOps tool's re-sync, a move between clusters' manifests).
 */
export const NAME_KEPT_MS = 5 * 60_000;

export interface NameHolder {
  /** `namespace/name` of the Model that holds the name, or that held it and was deleted. */
  holder: string;
  /** When the name is kept for a deleted holder's namespace: until when. */
  keptUntil?: Date;
  /** The holder was made again in the namespace that kept the name. */
  remade?: true;
}

const namespaceOf = (m: Model): string => m.metadata.namespace ?? 'default';

/**
 * Who holds each model name. A name is a V2 address across the cluster, so one namespace holds it:
 * that of the oldest live Model of the name (the Gateway API's rule for conflicting claims). When
 * the holder is deleted, its namespace keeps the name for NAME_KEPT_MS: a team waiting with a
 * Model of the same name does not take over the address (and the calls made to it) the moment its
 * owner deletes and re-creates its Model, and a Model made again there holds it while it lives.
 * Kept in the operator's memory: a restart forgets it (the oldest live Model then holds the name).
 */
export class ModelNames {
  private readonly kept = new Map<string, { namespace: string; until: number }>();

  /**
   * @param finalizer the operator's finalizer on a Model: one being deleted that still carries it
   *   holds its name until its deletion has been handled (and its namespace keeps it then), so no
   *   other Model takes the name in between, nor after a restart in between.
   */
  constructor(private readonly finalizer: string) {}

  private holds(m: Model): boolean {
    return !m.metadata.deletionTimestamp || (m.metadata.finalizers ?? []).includes(this.finalizer);
  }

  /** Who holds `model`'s name when its own namespace does not; undefined when it does. */
  holder(models: readonly Model[], model: Model, now = Date.now()): NameHolder | undefined {
    const name = model.metadata.name;
    const live = models.filter((m) => m.metadata.name === name && this.holds(m)).sort(creationOrder);
    const kept = this.kept.get(name);
    if (kept !== undefined) {
      // A Model made again in the namespace that kept the name holds it as long as it lives.
      const keeper = live.find((m) => namespaceOf(m) === kept.namespace && !m.metadata.deletionTimestamp);
      if (keeper !== undefined || kept.until > now) {
        if (keeper !== undefined) kept.until = Math.max(kept.until, now + NAME_KEPT_MS);
        if (kept.namespace === namespaceOf(model)) return undefined;
        return keeper !== undefined
          ? { holder: `${kept.namespace}/${name}`, remade: true }
          : { holder: `${kept.namespace}/${name}`, keptUntil: new Date(kept.until) };
      }
      this.kept.delete(name);
    }
    const [first] = live;
    if (first === undefined || namespaceOf(first) === namespaceOf(model)) return undefined;
    return { holder: `${namespaceOf(first)}/${name}` };
  }

  /**
   * `model`'s deletion is being handled (it still carries the finalizer): if it holds its name, its
   * namespace keeps the name a while.
   */
  release(models: readonly Model[], model: Model, now = Date.now()): void {
    if (this.holder(models, model, now) !== undefined) return;
    this.kept.set(model.metadata.name, { namespace: namespaceOf(model), until: now + NAME_KEPT_MS });
  }
}
