import { describe, expect, it } from '@jest/globals';
import type { Model } from '../../../common/resources/model.js';
import {
  ACTIVATION_LABEL,
  activationName,
  modelActivationService,
  modelService,
} from '../../../operator/serving/model-workload.js';

const model = {
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'Model',
  metadata: { name: 'model-iris', namespace: 'ml-team', uid: 'u1' },
  spec: { storageUri: 's3://b/iris', scaling: { minReplicas: 0 } },
} as Model;

describe("a workload's activation Service", () => {
  it('selects the same pods as its Service, those not Ready yet published too, on the HTTP port only', () => {
    const plan = { model, workload: 'model-iris-2', version: '2' };
    const wake = modelActivationService(plan);
    const main = modelService({ ...plan, gateway: 'central' });
    expect(wake.metadata?.name).toBe('model-iris-2-wake');
    expect(wake.spec?.selector).toEqual(main.spec?.selector);
    expect(wake.spec?.publishNotReadyAddresses).toBe(true);
    expect(wake.spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([['http', 8080, 'http']]);
    // Owned by the Model (collected with it), and marked so that it is never taken for a workload.
    expect(wake.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Model',
      name: 'model-iris',
      uid: 'u1',
    });
    expect(wake.metadata?.labels?.[ACTIVATION_LABEL]).toBe('true');
    expect(main.spec?.publishNotReadyAddresses).toBeUndefined();
  });

  it('has a DNS-label name whatever its workload is called', () => {
    const long = `model-${'x'.repeat(57)}`;
    expect(activationName(long)).toMatch(/^wake-[0-9a-f]{16}$/);
    expect(activationName(long)).not.toBe(activationName(`${long.slice(0, -1)}y`));
    expect(activationName('model-a')).toBe('model-a-wake');
  });
});
