import { answersAgree } from '../../../gateway/v2/shadow/agreement.js';
import { quantileOf, latencySlot, LATENCY_BOUNDS_MS } from '../../../common/redis/version-figures.js';

const answer = (outputs: unknown[], extra: Record<string, unknown> = {}) => ({
  model_name: 'm',
  model_version: '1',
  id: 'a',
  outputs,
  ...extra,
});
const out = (name: string, data: unknown[], shape = [data.length]) => ({
  name,
  datatype: 'FP64',
  shape,
  data,
});

describe('shadow answers compared with the serving version', () => {
  test('the same outputs agree, whatever the version, id or order', () => {
    expect(
      answersAgree(
        answer([out('predict', [1, 2]), out('proba', [0.25, 0.75])]),
        answer([out('proba', [0.25, 0.75]), out('predict', [1, 2])], { model_version: '2', id: 'b' }),
      ),
    ).toBe(true);
    // Rounding between two builds of one model is agreement.
    expect(answersAgree(answer([out('p', [0.1 + 0.2])]), answer([out('p', [0.3])]))).toBe(true);
  });

  test('a different value, shape, name or count of outputs disagrees', () => {
    const a = answer([out('predict', [1, 2])]);
    expect(answersAgree(a, answer([out('predict', [1, 3])]))).toBe(false);
    expect(answersAgree(a, answer([out('predict', [1, 2], [1, 2])]))).toBe(false);
    expect(answersAgree(a, answer([out('label', [1, 2])]))).toBe(false);
    expect(answersAgree(a, answer([out('predict', [1, 2]), out('x', [0])]))).toBe(false);
    expect(answersAgree(a, answer([out('predict', ['1', '2'])]))).toBe(false);
    expect(answersAgree(answer([out('p', [0.3])]), answer([out('p', [0.3001])]))).toBe(false);
  });

  test('what is not a V2 answer never agrees', () => {
    expect(answersAgree({ error: 'x' }, { error: 'x' })).toBe(false);
    expect(answersAgree(null, answer([]))).toBe(false);
    expect(answersAgree(answer([{ data: [1] }]), answer([{ data: [1] }]))).toBe(false);
    expect(answersAgree(answer([out('p', [NaN])]), answer([out('p', [NaN])]))).toBe(true);
  });
});

describe('the latency histogram the canary analysis reads', () => {
  test('slots and the p95 bound', () => {
    expect(latencySlot(0.4)).toBe(0);
    expect(latencySlot(5)).toBe(0);
    expect(latencySlot(6)).toBe(1);
    expect(latencySlot(1e6)).toBe(LATENCY_BOUNDS_MS.length);
    const counts = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    expect(quantileOf(counts, 0.95)).toBeUndefined();
    counts[1] = 94;
    counts[6] = 6;
    expect(quantileOf(counts, 0.95)).toBe(500);
    counts[6] = 0;
    counts[LATENCY_BOUNDS_MS.length] = 6;
    expect(quantileOf(counts, 0.95)).toBe(Infinity);
  });
});
