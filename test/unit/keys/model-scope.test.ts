import { MODEL_SCOPE_PATTERN, scopeAllows } from '../../../common/apikey/model-scope.js';

describe('a key limited to models', () => {
  it('allows every model without a scope', () => {
    expect(scopeAllows(undefined, 'model-anything')).toBe(true);
  });

  it('allows the names it lists, and what its patterns match', () => {
    const scope = ['model-iris', 'model-fraud-*', 'model-*-v2'];
    for (const name of [
      'model-iris',
      'model-fraud-',
      'model-fraud-eu',
      'model-fraud-eu-2',
      'model-x-v2',
      'model--v2',
    ])
      expect([name, scopeAllows(scope, name)]).toEqual([name, true]);
    for (const name of [
      'model-iris2',
      'model-iri',
      'model-fraud',
      'model-frauds-eu',
      'model-x-v3',
      'xmodel-iris',
    ])
      expect([name, scopeAllows(scope, name)]).toEqual([name, false]);
  });

  it('takes * for name characters only, and nothing else as a pattern', () => {
    expect(scopeAllows(['model-*'], 'model-a/b')).toBe(false);
    expect(scopeAllows(['model-*'], 'model-A')).toBe(false);
    // The management API and the CRD refuse an entry such as "model.iris"; were one to reach the
    // matcher, its dot would be a dot.
    expect(scopeAllows(['model.iris'], 'model-iris')).toBe(false);
  });

  it('accepts as entries names and patterns, and refuses anything else', () => {
    const re = new RegExp(MODEL_SCOPE_PATTERN);
    for (const ok of ['model-iris', 'model-fraud-*', '*', 'model-*-v2'])
      expect([ok, re.test(ok)]).toEqual([ok, true]);
    for (const bad of ['', 'Model-Iris', 'model_iris', 'model.iris', '-model', 'model-', 'model iris'])
      expect([bad, re.test(bad)]).toEqual([bad, false]);
  });
});

describe('the matcher', () => {
  it('takes linear time whatever the pattern: a run of * against a name it does not match', () => {
    const scope = [`${'*'.repeat(62)}z`, `*a${'*a'.repeat(30)}*b`];
    const started = performance.now();
    for (let i = 0; i < 1_000; i++) expect(scopeAllows(scope, `model-${'a'.repeat(56)}`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
    expect(scopeAllows(scope, `model-${'a'.repeat(40)}z`)).toBe(true);
  });

  it('matches middle parts in order and not overlapping the tail', () => {
    expect(scopeAllows(['model-*-a-*-a'], 'model-x-a-y-a')).toBe(true);
    expect(scopeAllows(['model-*-a-*-a'], 'model-x-a')).toBe(false);
    expect(scopeAllows(['*ab*ba*'], 'xabay')).toBe(false);
    expect(scopeAllows(['*ab*ba*'], 'xabba')).toBe(true);
    expect(scopeAllows(['m*m'], 'm')).toBe(false);
  });
});
