// The operator reads custom resources through schemas generated from the CRDs: whatever the API
// server stored must parse, or the operator takes the object for gone (its workloads torn down, its
// finalizer never taken off). These are the places where JavaScript and the API server differ.
import { describe, expect, test } from '@jest/globals';
import { modelSchema } from '../../../common/resources/generated/models.js';
import { goPattern } from '../../../tools/codegen/crd-to-zod.js';

const model = (spec: Record<string, unknown>) => ({
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'Model',
  metadata: { name: 'model-a', namespace: 'team-a' },
  spec,
});

describe('the generated resource schemas take what the API server takes', () => {
  test("a pattern's `.` matches what Go's does (all but a line feed); classes and escapes are kept", () => {
    expect(goPattern('^(s3|file)://.+')).toBe('^(s3|file)://[^\\n]+');
    expect(goPattern('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')).toBe('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$');
    expect(goPattern('^[A-Za-z_]+(\\.[A-Za-z_]+)+$')).toBe('^[A-Za-z_]+(\\.[A-Za-z_]+)+$');
    const js = new RegExp(goPattern('^a.b$'));
    for (const c of ['\r', '\u2028', '\u2029', 'x']) expect(js.test(`a${c}b`)).toBe(true);
    expect(js.test('a\nb')).toBe(false);
  });

  test('a quantity past 2^53 bytes, and a storage URI with a line separator, parse', () => {
    const big = model({
      storageUri: 's3://bucket/a\u2028b',
      resources: { limits: { memory: 10_000_000_000_000_000 }, requests: { cpu: '500m' } },
    });
    expect(modelSchema.safeParse(big).success).toBe(true);
    // What the CRD refuses, the schema refuses too: no control characters in a storage URI.
    expect(modelSchema.safeParse(model({ storageUri: 's3://bucket/a\rb' })).success).toBe(false);
  });
});
