import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { CRD_DIR, generateAll } from '../../../tools/codegen/generate-types.js';
import { modelSchema } from '../../../common/resources/generated/models.js';
import { MODEL_NAME_PATTERN } from '../../../common/resources/model-name.js';

describe('types generated from the CRDs', () => {
  test('common/resources/generated/ is up to date with crds/ (run npm run codegen)', async () => {
    for (const [file, text] of await generateAll()) {
      expect({ file, text: await readFile(file, 'utf8') }).toEqual({ file, text });
    }
  });

  test('the generated Model schema enforces the CRD rules', () => {
    const base = { apiVersion: 'tollgate.dev/v1alpha1', kind: 'Model', metadata: { name: 'model-a' } };
    expect(modelSchema.safeParse({ ...base, spec: { storageUri: 's3://b/m', replicas: 2 } }).success).toBe(
      true,
    );
    expect(modelSchema.safeParse({ ...base, spec: { storageUri: 'http://b/m' } }).success).toBe(false);
    expect(modelSchema.safeParse({ ...base, spec: { storageUri: 's3://b/m', replicas: 51 } }).success).toBe(
      false,
    );
  });

  test("the CRD's name rule is the one in common/resources/model-name.ts", async () => {
    const crd = await readFile(`${CRD_DIR}/models.yaml`, 'utf8');
    const doc = parse(crd) as {
      spec: {
        versions: Array<{
          schema: { openAPIV3Schema: { 'x-kubernetes-validations': Array<{ rule: string }> } };
        }>;
      };
    };
    const rule = doc.spec.versions[0]!.schema.openAPIV3Schema['x-kubernetes-validations'][0]!.rule;
    expect(rule).toContain(`matches('${MODEL_NAME_PATTERN}')`);
  });
});
