import type { NormalisedPath } from './normalise.js';

/**
 * The endpoint an `/events` call's usage is counted under: the workflow service or platform
 * resource, not the full path (ids in paths would make every call its own endpoint). Whether the
 * gateway proxies the call or a proxy asks Tollgate about it (forward-auth/), it counts the same.
 */
export function usageEndpoint(method: string, path: NormalisedPath): string {
  const { segments } = path;
  const depth = segments[1] === 'bda' ? 4 : segments[1] === 'platform' ? 5 : 2;
  return `${method} /${segments.slice(0, depth).join('/')}`;
}
