/**
 * The module of the key a call was made with, once the key is known, for the request metric's
 * `module` label on paths that answer outside the events handler (V2).
 */
const modules = new WeakMap<object, string>();

export function noteModule(req: object, module: string): void {
  modules.set(req, module);
}

/** `none` for a call refused before its key was known. */
export function moduleOf(req: object): string {
  return modules.get(req) ?? 'none';
}
