import { refKey, type ResourceRef, type WatchedSource } from '../../../operator/framework/resource-source.js';

/** A watched set held in memory: what an informer's cache holds, changed by the test. */
export class Held<T extends { metadata: { name: string; namespace?: string } }> implements WatchedSource<T> {
  readonly items = new Map<string, T>();
  private onChange: ((ref: ResourceRef, gone: T | undefined) => void) | undefined;
  start(onChange: (ref: ResourceRef, gone: T | undefined) => void): Promise<void> {
    this.onChange = onChange;
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
  get(ref: ResourceRef): T | undefined {
    return this.items.get(refKey(ref));
  }
  list(): T[] {
    return [...this.items.values()];
  }
  put(item: T): void {
    const ref = { namespace: item.metadata.namespace ?? '', name: item.metadata.name };
    this.items.set(refKey(ref), item);
    this.onChange?.(ref, undefined);
  }
  delete(ref: ResourceRef): void {
    const gone = this.items.get(refKey(ref));
    this.items.delete(refKey(ref));
    this.onChange?.(ref, gone);
  }
}
