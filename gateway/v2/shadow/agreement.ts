/**
 * Whether two V2 inference answers agree: the same outputs by name, each with the same shape and
 * data (numbers within a relative 1e-6, since two builds of one model may round differently).
 * What else an answer carries (id, model_version, parameters) says nothing of the prediction.
 */
const RELATIVE = 1e-6;
const ABSOLUTE = 1e-12;

interface Output {
  name?: unknown;
  shape?: unknown;
  data?: unknown;
}

function outputsOf(answer: unknown): Map<string, Output> | undefined {
  const outputs = (answer as { outputs?: unknown } | null)?.outputs;
  if (!Array.isArray(outputs)) return undefined;
  const byName = new Map<string, Output>();
  for (const o of outputs as Output[]) {
    if (o === null || typeof o !== 'object' || typeof o.name !== 'string') return undefined;
    byName.set(o.name, o);
  }
  return byName;
}

function sameValue(a: unknown, b: unknown, depth = 0): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
    return Math.abs(a - b) <= Math.max(ABSOLUTE, RELATIVE * Math.max(Math.abs(a), Math.abs(b)));
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    // A V2 tensor's data nests a few levels at most; past that the answers are not tensors.
    if (depth > 8 || a.length !== b.length) return false;
    return a.every((x, i) => sameValue(x, b[i], depth + 1));
  }
  return a === b;
}

export function answersAgree(serving: unknown, shadow: unknown): boolean {
  const a = outputsOf(serving);
  const b = outputsOf(shadow);
  if (a === undefined || b === undefined || a.size !== b.size) return false;
  for (const [name, out] of a) {
    const other = b.get(name);
    if (other === undefined) return false;
    if (!sameValue(out.shape, other.shape) || !sameValue(out.data, other.data)) return false;
  }
  return true;
}
