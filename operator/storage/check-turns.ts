import type { OwnedSource } from '../framework/controller.js';
import { parseRefKey } from '../framework/resource-source.js';

/**
 * Turns at checking a store, per namespace. A Model's store is its author's, and a check may hold a
 * reconcile worker for its whole deadline; the workers are every team's. So a namespace's Models
 * check at most `perNamespace` stores at once, and the next ones wait off the workers: their
 * reconcile ends at once, and they are enqueued again, in the order they asked, as turns come
 * free. (A team editing many Models against a store that never answers holds two workers, not
 * all of them.)
 *
 * An owned source of the Model controller: waking a Model enqueues it as a change would, and one
 * woken while another still runs keeps the controller from being idle until its turn has come.
 */
export class CheckTurns implements OwnedSource {
  private readonly taken = new Map<string, number>();
  /** Models waiting for a turn, by namespace, in the order they asked (`namespace/name`). */
  private readonly waiting = new Map<string, Set<string>>();
  /** Models woken for a turn and not yet reconciled: the turns they were woken for are theirs. */
  private readonly woken = new Map<string, Set<string>>();
  private wake: (key: string) => void = () => undefined;

  constructor(private readonly perNamespace: number) {}

  start(onChange: (ref: { namespace: string; name: string }) => void): Promise<void> {
    this.wake = (key) => onChange(parseRefKey(key));
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.wake = () => undefined;
    return Promise.resolve();
  }

  /** Takes a turn of `namespace` for Model `key`; false: none is free, and it is woken for the next. */
  take(namespace: string, key: string): boolean {
    remove(this.woken, namespace, key);
    const taken = this.taken.get(namespace) ?? 0;
    if (taken >= this.perNamespace) {
      add(this.waiting, namespace, key);
      return false;
    }
    this.taken.set(namespace, taken + 1);
    remove(this.waiting, namespace, key);
    return true;
  }

  /** Gives a turn back, and wakes the Model that waited longest for one. */
  give(namespace: string): void {
    const left = (this.taken.get(namespace) ?? 1) - 1;
    if (left > 0) this.taken.set(namespace, left);
    else this.taken.delete(namespace);
    this.wakeNext(namespace);
  }

  /**
   * After every reconcile of a Model, whatever its path: one woken for a turn may have needed
   * none, or be gone, and the turn it was woken for then goes to the next in line.
   */
  done(namespace: string, key: string): void {
    remove(this.woken, namespace, key);
    this.wakeNext(namespace);
  }

  /** A Model gone: it waits for nothing. */
  forget(namespace: string, key: string): void {
    remove(this.waiting, namespace, key);
  }

  private wakeNext(namespace: string): void {
    const busy = (this.taken.get(namespace) ?? 0) + (this.woken.get(namespace)?.size ?? 0);
    if (busy >= this.perNamespace) return;
    const [next] = this.waiting.get(namespace) ?? [];
    if (next === undefined) return;
    remove(this.waiting, namespace, next);
    add(this.woken, namespace, next);
    this.wake(next);
  }
}

function add(sets: Map<string, Set<string>>, namespace: string, key: string): void {
  const set = sets.get(namespace) ?? new Set<string>();
  set.add(key);
  sets.set(namespace, set);
}

function remove(sets: Map<string, Set<string>>, namespace: string, key: string): void {
  const set = sets.get(namespace);
  set?.delete(key);
  if (set?.size === 0) sets.delete(namespace);
}
