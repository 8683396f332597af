/**
 * A value someone else wrote (a caller's request, a team's settings file) as a message quotes it:
 * JSON-like, but never longer than `max` characters nor deeper than a few levels. `JSON.stringify`
 * of it could run to megabytes (a shape of a million numbers) or throw (a value nested thousands
 * deep), turning a 400 into a 500.
 */
export function previewValue(value: unknown, max = 80): string {
  const text = preview(value, 3, max + 1);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function preview(value: unknown, depth: number, room: number): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > room ? value.slice(0, room) : value);
  }
  if (value === null || typeof value !== 'object') return String(value);
  const open = Array.isArray(value) ? '[' : '{';
  const close = Array.isArray(value) ? ']' : '}';
  if (depth === 0) return `${open}…${close}`;
  const parts: string[] = [];
  let used = 2;
  // Item by item, stopping once there is no room: the value may hold millions of them.
  const add = (key: string | undefined, item: unknown): boolean => {
    if (used >= room) {
      parts.push('…');
      return false;
    }
    const shown = preview(item, depth - 1, room - used);
    const part = key === undefined ? shown : `${JSON.stringify(key.slice(0, room))}:${shown}`;
    parts.push(part);
    used += part.length + 1;
    return true;
  };
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) if (!add(undefined, item)) break;
  } else {
    for (const key in value) {
      if (Object.hasOwn(value, key) && !add(key, (value as Record<string, unknown>)[key])) break;
    }
  }
  return `${open}${parts.join(',')}${close}`;
}

/**
 * How many values (objects, arrays and what they hold, the root included) a parsed JSON document
 * holds, counted up to `limit + 1` and no further: what parsing it made, which can be twenty times
 * its text (`[{},{},...]`). Without recursion, so a document nested thousands deep is counted too.
 */
export function countValues(root: unknown, limit: number): number {
  let count = 1;
  const pending: unknown[] = [root];
  while (pending.length > 0 && count <= limit) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    const items: unknown[] = Array.isArray(value) ? (value as unknown[]) : Object.values(value);
    count += items.length;
    // Counted before walked: a list of a million is over the limit without a million pushes.
    if (count <= limit) for (const item of items) pending.push(item);
  }
  return Math.min(count, limit + 1);
}
