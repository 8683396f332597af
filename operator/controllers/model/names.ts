import { creationOrder } from '../../../common/resources/claim-order.js';
import type { Model } from '../../../common/resources/model.js';

/**
 * How long a deleted Model's namespace keeps its name: long enough for a Model deleted and made
 * again (`kubectl replace --force`, a GitOps tool's re-sync, a move between clusters' manifests).
 */
export const NAME_KEPT_MS = 5 * 60_000;

/** A deleted holder's name, kept for its namespace until `until` (epoch ms), held since `since`. */
export interface KeptName {
  name: string;
  namespace: string;
  until: number;
  since: number;
}

export interface NameHolder {
  /** `namespace/name` of the Model that holds the name, or that held it and was deleted. */
  holder: string;
  /** When the name is kept for a deleted holder's namespace: until when. */
  keptUntil?: Date;
  /** The holder was made again in the namespace that kept the name. */
  remade?: true;
}

const namespaceOf = (m: Model): string => m.metadata.namespace ?? 'default';

/** Since when a Model's namespace holds its name: what the operator recorded, else its creation. */
function heldSince(m: Model): number {
  const t = m.status?.nameHeldSince ?? m.metadata.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime() || 0;
}

/** The Gateway API's rule (the oldest claim wins, then `namespace/name`), by the time held. */
const byHeldSince = (a: Model, b: Model): number => heldSince(a) - heldSince(b) || creationOrder(a, b);

/**
 * Who holds each model name. A name is a V2 address across the cluster, so one namespace holds it:
 * that whose Model has held it longest (the Gateway API's rule for conflicting claims). When the
 * holder is deleted, its namespace keeps the name for NAME_KEPT_MS, so a team waiting with a Model
 * of the same name does not take over the address (and the calls made to it) when its owner
 * deletes and re-creates its Model; the Model made again inherits the time held, which the
 * operator records in its status (`status.nameHeldSince`, which no team may write), so it keeps the
 * name across operator restarts; the 5 minutes themselves are kept in Redis too (kept-names.ts)
 * and restored when an operator starts.
 */
export class ModelNames {
  private readonly kept = new Map<string, Omit<KeptName, 'name'>>();

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
    const live = models.filter((m) => m.metadata.name === name && this.holds(m)).sort(byHeldSince);
    const kept = this.keptFor(name, live, now);
    if (kept !== undefined) {
      if (kept.namespace === namespaceOf(model)) return undefined;
      return kept.keeper
        ? { holder: `${kept.namespace}/${name}`, remade: true }
        : { holder: `${kept.namespace}/${name}`, keptUntil: new Date(kept.until) };
    }
    const [first] = live;
    if (first === undefined || namespaceOf(first) === namespaceOf(model)) return undefined;
    return { holder: `${namespaceOf(first)}/${name}` };
  }

  /**
   * What a Model that holds its name records as `status.nameHeldSince`: the time its namespace
   * first held it when the name was kept for it, else what it recorded, else its creation.
   */
  since(models: readonly Model[], model: Model, now = Date.now()): string | undefined {
    const name = model.metadata.name;
    const live = models.filter((m) => m.metadata.name === name && this.holds(m));
    const kept = this.keptFor(name, live, now);
    const own = heldSince(model);
    const since =
      kept !== undefined && kept.namespace === namespaceOf(model) ? Math.min(kept.since, own) : own;
    return since === 0 ? undefined : new Date(since).toISOString();
  }

  /**
   * `model`'s deletion is being handled (it still carries the finalizer): if it holds its name, its
   * namespace keeps the name a while. Resolves with what is kept, for the caller to persist.
   */
  release(models: readonly Model[], model: Model, now = Date.now()): KeptName | undefined {
    if (this.holder(models, model, now) !== undefined) return undefined;
    const kept = {
      name: model.metadata.name,
      namespace: namespaceOf(model),
      until: now + NAME_KEPT_MS,
      since: heldSince(model),
    };
    this.restore(kept);
    return kept;
  }

  /** A name kept by an earlier process (or this one), until its time is up. */
  restore({ name, ...kept }: KeptName): void {
    this.kept.set(name, kept);
  }

  /** The name kept for a deleted holder's namespace, while it is; `keeper` when a Model is there again. */
  private keptFor(
    name: string,
    live: readonly Model[],
    now: number,
  ): { namespace: string; until: number; since: number; keeper: boolean } | undefined {
    const kept = this.kept.get(name);
    if (kept === undefined) return undefined;
    const keeper = live.some((m) => namespaceOf(m) === kept.namespace && !m.metadata.deletionTimestamp);
    if (!keeper && kept.until <= now) {
      this.kept.delete(name);
      return undefined;
    }
    return { ...kept, keeper };
  }
}
