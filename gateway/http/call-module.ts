import type { IncomingMessage } from 'node:http';

/**
 * The module of the key a call was made with, once the key is known, for the request metric's
 * `module` label on paths that answer outside the events handler (V2).
 */
const modules = new WeakMap<IncomingMessage, string>();

export function noteModule(req: IncomingMessage, module: string): void {
  modules.set(req, module);
}

/** `none` for a call refused before its key was known. */
export function moduleOf(req: IncomingMessage): string {
  return modules.get(req) ?? 'none';
}
