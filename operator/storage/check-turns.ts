import type { OwnedSource } from '../framework/controller.js';
import { parseRefKey } from '../framework/resource-source.js';

/**
 * Turns at checking a store, per namespace. A Model's store is its author's, and a check may hold a
 * reconcile worker for its whole deadline; the workers are every team's. So a namespace's Models
 * check at most `perNamespace` stores at once, and the next ones wait off the workers: their
 * reconcile ends at once, and they are enqueued again, oldest first, as turns come free. (A team
 * editing many Models against a store that never answers holds two workers, not all of them.)
 *
 * An owned source of the Model controller: waking a Model enqueues it as a change would, and one
 * woken while another still runs keeps the controller from being idle until its turn has come.
 */
export class CheckTurns implements OwnedSource {
  private readonly taken = new Map<string, number>();
  /** Models waiting for a turn, by namespace, in the order they asked (`namespace/name`). */
  private readonly waiting = new Map<string, Set<string>>();
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
    const taken = this.taken.get(namespace) ?? 0;
    if (taken >= this.perNamespace) {
      const queue = this.waiting.get(namespace) ?? new Set<string>();
      queue.add(key);
      this.waiting.set(namespace, queue);
      return false;
    }
    this.taken.set(namespace, taken + 1);
    this.waiting.get(namespace)?.delete(key);
    return true;
  }

  /** Gives a turn back, and wakes the Model that waited longest for one. */
  give(namespace: string): void {
    const left = (this.taken.get(namespace) ?? 1) - 1;
    if (left > 0) this.taken.set(namespace, left);
    else this.taken.delete(namespace);
    this.pass(namespace);
  }

  /**
   * A reconcile that needed no turn: one woken for a turn may no longer need it, and the turn it
   * was woken for must then go to the next in line.
   */
  pass(namespace: string): void {
    const queue = this.waiting.get(namespace);
    if (queue === undefined || (this.taken.get(namespace) ?? 0) >= this.perNamespace) return;
    const [next] = queue;
    if (next === undefined) return;
    queue.delete(next);
    if (queue.size === 0) this.waiting.delete(namespace);
    this.wake(next);
  }

  /** A Model gone: it waits for nothing. */
  forget(namespace: string, key: string): void {
    const queue = this.waiting.get(namespace);
    queue?.delete(key);
    if (queue?.size === 0) this.waiting.delete(namespace);
  }
}
