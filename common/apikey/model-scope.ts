/**
 * A platform key may be limited to some models (`spec.models`): names (`model-iris`) or patterns
 * where `*` stands for any run of name characters (`model-fraud-*`). Absent: every model the key's
 * roles allow.
 */

/** One entry of `spec.models`: a model name, or a pattern with `*`. */
export const MODEL_SCOPE_PATTERN = '^[a-z0-9*]([-a-z0-9*]*[a-z0-9*])?$';
export const MODEL_SCOPE_MAX = 32;

/** What `*` may stand for: the characters of a model name. */
const NAME_CHARACTERS = /^[-a-z0-9]*$/;

/**
 * A glob with `*` only, matched in linear time: the literal head and tail in place, each middle
 * part at its first place after the last. (A regular expression of `*` runs backtracks
 * exponentially on a pattern such as `**…*z`, which a key's owner chooses.)
 */
function globMatches(pattern: string, name: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === name;
  const head = parts[0] as string;
  const tail = parts[parts.length - 1] as string;
  if (name.length < head.length + tail.length || !name.startsWith(head) || !name.endsWith(tail)) return false;
  let at = head.length;
  const end = name.length - tail.length;
  for (const middle of parts.slice(1, -1)) {
    if (middle === '') continue;
    const found = name.indexOf(middle, at);
    if (found < 0 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}

/** Whether a key whose `models` is `scope` may call `model`. */
export function scopeAllows(scope: readonly string[] | undefined, model: string): boolean {
  if (scope === undefined) return true;
  if (!NAME_CHARACTERS.test(model)) return false;
  return scope.some((entry) => globMatches(entry, model));
}
