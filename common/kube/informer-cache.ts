import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import type { Logger } from '../logger.js';
import { parseRefKey, refKey, type ObjectRef } from './object-ref.js';

export type Parse<T> = (raw: unknown) => T | undefined;

const RESTART_DELAY_MS = 1000;
/** Objects per list request: a cold start of 100,000 ApiKeys is read a page at a time. */
const LIST_PAGE = 500;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * What the cache keeps of an object: all but its `managedFields` and kubectl's last-applied copy,
 * which no reconcile reads and which are most of a small object's size (an ApiKey's cache entry
 * shrinks by more than half). In place: the informer caches the very object it hands out.
 */
function slim(obj: KubernetesObject): KubernetesObject {
  const meta = obj.metadata as (KubernetesObject['metadata'] & { managedFields?: unknown }) | undefined;
  if (meta === undefined) return obj;
  delete meta.managedFields;
  if (meta.annotations?.[LAST_APPLIED] !== undefined) {
    const { [LAST_APPLIED]: _dropped, ...rest } = meta.annotations;
    meta.annotations = rest;
  }
  return obj;
}

export type ListPage = (page: { limit: number; _continue?: string }) => Promise<unknown>;

/**
 * Every object, listed a page at a time, each handed to `ingest` as its page arrives. The next page
 * is asked for before this one is ingested, so the API server makes it while this process parses.
 */
async function listInPages(
  list: ListPage,
  ingest: (obj: KubernetesObject) => void,
): Promise<KubernetesListObject<KubernetesObject>> {
  const items: KubernetesObject[] = [];
  const ask = (next?: string) =>
    list({ limit: LIST_PAGE, ...(next ? { _continue: next } : {}) }) as Promise<
      KubernetesListObject<KubernetesObject>
    >;
  let pending: Promise<KubernetesListObject<KubernetesObject>> | undefined = ask();
  let last: KubernetesListObject<KubernetesObject> | undefined;
  while (pending !== undefined) {
    last = await pending;
    // `_continue` from the typed clients, `continue` in a custom resource list's raw JSON.
    const meta = last.metadata as { _continue?: string; continue?: string } | undefined;
    const next = meta?._continue || meta?.continue || undefined;
    pending = next === undefined ? undefined : ask(next);
    // Settled below by the next turn; if ingesting throws first, its failure is not unhandled.
    pending?.catch(() => undefined);
    for (const item of last.items) {
      ingest(item);
      items.push(item);
    }
  }
  return { ...last!, items };
}

/**
 * An informer-backed cache. Each object is parsed once, when it arrives, and the parsed value is
 * what `get` and `list` hand out; when parsing made a copy, the informer's own copy is cut down to
 * the name and resourceVersion it compares by, so an object is held once, not twice (100,000
 * ApiKeys). The client's informer stops on a watch error (e.g. the API server restarting); this
 * restarts it, relisting, so no change is missed.
 */
export class InformerCache<T> {
  private informer: (Informer<KubernetesObject> & ObjectCache<KubernetesObject>) | undefined;
  private readonly parsed = new Map<string, T>();
  /** Informer copies already parsed and cut down (from a list page): their events parse nothing. */
  private readonly ingested = new WeakSet<KubernetesObject>();
  private stopped = false;
  private markStopped = (): void => undefined;
  /** Settles when `stop` is called: a start still waiting for its first list gives up. */
  private readonly stopping = new Promise<void>((resolve) => (this.markStopped = resolve));
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly path: string,
    private readonly listPage: ListPage,
    protected readonly parse: Parse<T>,
    private readonly log: Logger,
    private readonly labelSelector?: string,
  ) {}

  private ingest(obj: KubernetesObject): void {
    slim(obj);
    const key = refOf(obj);
    const t = this.parse(obj);
    if (t === undefined) this.parsed.delete(key);
    else this.parsed.set(key, t);
    if ((t as unknown) !== obj) cutDown(obj);
  }

  /**
   * Resolves once the first list is in the cache: never earlier, so no reader takes an empty cache
   * for an empty cluster (an index marked built over no keys). A failed first list is tried again
   * every second, or, with `failFast`, rejects with its error and leaves the cache stopped.
   */
  async start(
    onChange: (ref: ObjectRef, deleted: T | undefined) => void,
    opts: {
      failFast?: boolean;
      /**
       * Whether an update matters to the reader (controller-runtime's predicates): when it says no,
       * the cache still takes the new value but `onChange` is not called. Objects first seen, from
       * a list, and deletions are always announced.
       */
      changed?: (before: T, after: T) => boolean;
    } = {},
  ): Promise<void> {
    let listed = false;
    let markListed = (): void => undefined;
    const firstList = new Promise<void>((resolve) => (markListed = resolve));
    let firstError: unknown;
    const informer = makeInformer(
      this.kc,
      this.path,
      async () => {
        const seen = listed ? undefined : new Set<string>();
        // client-node checks for a stop only before it lists: a list stopped half-way would
        // otherwise fill the cache and open a watch that nothing ever closes.
        const stoppedWhileListing = (): void => {
          if (this.stopped) throw new Error(`listing ${this.path}: the cache was stopped`);
        };
        const list = await listInPages(this.listPage, (obj) => {
          stoppedWhileListing();
          this.ingest(obj);
          this.ingested.add(obj);
          seen?.add(refOf(obj));
        });
        // A first list that failed half-way left its pages' objects parsed, and the informer, which
        // never took that list, will announce no deletion of those gone since: this list decides.
        // (A later relist is the informer's to diff; its deletions look up what is parsed here.)
        stoppedWhileListing();
        if (seen !== undefined)
          for (const key of this.parsed.keys()) if (!seen.has(key)) this.parsed.delete(key);
        listed = true;
        markListed();
        return list;
      },
      this.labelSelector,
    );
    this.informer = informer;
    const { changed } = opts;
    const emit = (obj: KubernetesObject) => {
      const key = refOf(obj);
      // A list page's object is announced once, after the list: forgotten then, so the set is
      // empty once the cache is started, not one entry for each of 100,000 objects.
      if (!this.ingested.delete(obj)) {
        const before = changed === undefined ? undefined : this.parsed.get(key);
        this.ingest(obj);
        const after = this.parsed.get(key);
        if (before !== undefined && after !== undefined && changed?.(before, after) === false) return;
      }
      onChange(parseRefKey(key), undefined);
    };
    informer.on('add', emit);
    informer.on('update', emit);
    informer.on('delete', (obj) => {
      const key = refOf(obj);
      // The last state seen: a relist's deletion hands back the informer's cut-down copy.
      const gone = this.parsed.get(key) ?? (isCutDown(obj) ? undefined : this.parse(obj));
      this.parsed.delete(key);
      onChange(parseRefKey(key), gone);
    });
    informer.on('error', (err) => {
      if (this.stopped) return;
      if (!listed && opts.failFast === true) {
        firstError = err;
        return;
      }
      this.log.warn({ err, path: this.path }, listed ? 'watch failed; relisting' : 'list failed; retrying');
      this.restartTimer = setTimeout(() => {
        if (!this.stopped)
          informer.start().catch((e: unknown) => this.log.warn({ err: e, path: this.path }, 'relist failed'));
      }, RESTART_DELAY_MS);
    });
    await informer.start();
    if (!listed && opts.failFast === true) {
      await this.stop();
      throw firstError ?? new Error(`listing ${this.path} failed`);
    }
    await Promise.race([firstList, this.stopping]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.markStopped();
    clearTimeout(this.restartTimer);
    await this.informer?.stop();
  }

  get(ref: ObjectRef): T | undefined {
    return this.parsed.get(refKey(ref));
  }

  list(): T[] {
    return [...this.parsed.values()];
  }

  values(): IterableIterator<T> {
    return this.parsed.values();
  }

  /**
   * An object this process has just written, cached before its watch event comes back, so the
   * writer reads its own write at once.
   */
  remember(obj: Named): void {
    const t = this.parse(obj);
    if (t !== undefined) this.parsed.set(refOf(obj), t);
  }

  /** An object this process has just deleted, gone from the cache before its watch event. */
  forget(ref: ObjectRef): void {
    this.parsed.delete(refKey(ref));
  }
}

/** Any object with a name, such as a write's answer. */
interface Named {
  metadata?: { name?: string; namespace?: string };
}

const refOf = (obj: Named): string =>
  refKey({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });

const isCutDown = (obj: KubernetesObject): boolean =>
  Object.keys(obj.metadata ?? {}).length === 3 &&
  Object.values(obj).filter((v) => v !== undefined).length === 1;

/** What the informer compares a cached copy by (namespace, name, resourceVersion), and nothing else. */
function cutDown(obj: KubernetesObject): void {
  const { name, namespace, resourceVersion } = obj.metadata ?? {};
  // Cleared, not deleted: an object that loses properties turns into a hash table several times
  // its size, kept for every object the informer holds.
  for (const field of Object.keys(obj)) (obj as Record<string, unknown>)[field] = undefined;
  obj.metadata = { name, namespace, resourceVersion };
}
