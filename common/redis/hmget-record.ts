/**
 * An HMGET's answer, as a pipeline gives it, as the fields it found: `fields` are those the HMGET
 * asked for, in its order (none if the command failed).
 */
export function hmgetRecord(
  fields: readonly string[],
  result: [Error | null, unknown] | undefined,
): Record<string, string> {
  const hash: Record<string, string> = {};
  const [err, values] = result ?? [null, []];
  if (err !== null || !Array.isArray(values)) return hash;
  fields.forEach((f, i) => {
    const v: unknown = values[i];
    if (typeof v === 'string') hash[f] = v;
  });
  return hash;
}
