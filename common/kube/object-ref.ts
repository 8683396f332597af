/** A namespaced object's name: what caches, work queues and reconciles key objects by. */
export interface ObjectRef {
  namespace: string;
  name: string;
}

/**
 * `<namespace>/<name>`. Joined, not a template literal: V8 makes a template of 13 characters or more
 * a rope of two extra objects, kept by every map a ref keys (100,000 ApiKeys, several maps each).
 */
export const refKey = (r: ObjectRef): string => [r.namespace, r.name].join('/');

export function parseRefKey(key: string): ObjectRef {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
