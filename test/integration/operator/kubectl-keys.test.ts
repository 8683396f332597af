import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { parse, stringify } from 'yaml';
import { hashKey } from '../../../common/apikey/format.js';
import { keyChangeTag, redisChannels, redisKeys } from '../../../common/redis/schema.js';
import { API_KEY_FINALIZER } from '../../../common/resources/apikey.js';
import type { OperatorManager } from '../../../operator/manager.js';
import { redis } from '../../harness/index.js';
import { readSealed } from '../signing.js';
import {
  apiKeyBody,
  cluster,
  type Cluster,
  eventually,
  keyRef,
  listen,
  namespace,
  ROOT,
  startOperator,
} from './support.js';

const run = promisify(execFile);
/** The CLI as a user runs it. */
const tollgate = (...args: string[]) => run(process.execPath, [path.join(ROOT, 'bin/tollgate.js'), ...args]);

/**
 * ApiKeys as a platform that keeps its keys in Git applies them (`kubectl apply`, Argo CD, Flux):
 * without the operator's finalizer. They work once the operator has listed them; the finalizer
 * follows in the background; one deleted before it lands still loses its entry.
 */
const TAG = 'operator-kubectl-keys';
/** Keys labelled so are refused the finalizer by the API server (the policy below). */
const HOLD_LABEL = 'test.tollgate.dev/hold-finalizer';

describe('ApiKeys applied with kubectl (no finalizer)', () => {
  let c: Cluster;
  let ns: string;
  let redisUrl: string;
  let client: Redis;
  let operator: OperatorManager | undefined;
  let folder: string;
  let policy: string;

  const manifest = (k: ReturnType<typeof apiKeyBody>, labels: Record<string, string> = {}) => ({
    ...k.body,
    metadata: { ...k.body.metadata, namespace: ns, labels },
  });
  const grantOf = (hash: string) => readSealed(client, redisKeys.apiKey(hash));
  const finalizersOf = async (id: string) =>
    (
      (await c.custom.getNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${id}` })) as {
        metadata: { finalizers?: string[] };
      }
    ).metadata.finalizers ?? [];
  const gone = (id: string) =>
    c.custom.getNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${id}` }).then(
      () => false,
      () => true,
    );

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-kubectl');
    policy = `hold-key-finalizer-${ns}`;
    redisUrl = (await redis(TAG)).url;
    client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    folder = await mkdtemp(path.join(tmpdir(), 'tollgate-kubectl-keys-'));
    // A real admission policy standing in for the moment between a key's entry and its finalizer:
    // the API server refuses the finalizer to keys of this namespace carrying the label.
    const policyFile = path.join(folder, 'policy.yaml');
    await writeFile(
      policyFile,
      [
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicy',
          metadata: { name: policy },
          spec: {
            failurePolicy: 'Fail',
            matchConstraints: {
              resourceRules: [
                {
                  apiGroups: ['tollgate.dev'],
                  apiVersions: ['v1alpha1'],
                  operations: ['UPDATE'],
                  resources: ['apikeys'],
                },
              ],
            },
            validations: [
              {
                expression: `!has(object.metadata.labels) || !('${HOLD_LABEL}' in object.metadata.labels) || !has(object.metadata.finalizers) || !object.metadata.finalizers.exists(f, f == '${API_KEY_FINALIZER}')`,
                message: 'held by the test',
              },
            ],
          },
        },
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingAdmissionPolicyBinding',
          metadata: { name: policy },
          spec: {
            policyName: policy,
            validationActions: ['Deny'],
            matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
          },
        },
      ]
        .map((d) => stringify(d))
        .join('---\n'),
    );
    await c.kubectl('apply', '-f', policyFile);
    // In force once the API server refuses a held key the finalizer (its policy cache syncs).
    const probe = apiKeyBody('bda');
    await c.custom.createNamespacedCustomObject({
      ...keyRef,
      namespace: ns,
      body: manifest(probe, { [HOLD_LABEL]: 'true' }),
    });
    await eventually(
      () =>
        c.custom
          .patchNamespacedCustomObject(
            {
              ...keyRef,
              namespace: ns,
              name: `key-${probe.id}`,
              body: [{ op: 'add', path: '/metadata/finalizers', value: [API_KEY_FINALIZER] }],
            },
            // A JSON patch: the generated client's default content type for a patch.
          )
          .then(
            async () => {
              // Taken: the policy is not in force yet; undone, and tried again.
              await c.custom.patchNamespacedCustomObject({
                ...keyRef,
                namespace: ns,
                name: `key-${probe.id}`,
                body: [{ op: 'remove', path: '/metadata/finalizers' }],
              });
              return false;
            },
            (err: unknown) => String(err).includes('held by the test'),
          ),
      'the admission policy in force',
    );
    await c.custom.deleteNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${probe.id}` });
  });
  afterAll(async () => {
    await operator?.stop();
    client?.disconnect();
    await c?.kubectl(
      'delete',
      'validatingadmissionpolicybinding,validatingadmissionpolicy',
      policy,
      '--ignore-not-found',
    );
    if (folder) await rm(folder, { recursive: true, force: true });
    c?.kc.close();
  });

  test('a folder applied before the operator starts: every key indexed by the first build, then each gets its finalizer', async () => {
    const keys = Array.from({ length: 40 }, () => apiKeyBody('bda'));
    const dir = path.join(folder, 'keys');
    await mkdir(dir);
    for (const k of keys) await writeFile(path.join(dir, `key-${k.id}.yaml`), stringify(manifest(k)));
    await c.kubectl('apply', '-f', dir);
    for (const k of keys) expect(await finalizersOf(k.id)).toEqual([]);

    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
    // The marker is set over a complete index: every key has its entry, finalizer or not.
    await eventually(async () => (await client.get(redisKeys.indexMarker)) !== null, 'the index marker');
    for (const k of keys) expect(await grantOf(k.hash)).toMatchObject({ id: k.id, module: 'bda' });
    for (const k of keys)
      await eventually(async () => (await finalizersOf(k.id)).includes(API_KEY_FINALIZER), 'its finalizer');

    // Applied again (as Git does on every sync): nothing taken away, the finalizer stays.
    await c.kubectl('apply', '-f', dir);
    expect(await finalizersOf(keys[0]!.id)).toEqual([API_KEY_FINALIZER]);
    expect(await grantOf(keys[0]!.hash)).toMatchObject({ id: keys[0]!.id });
  });

  test('`tollgate key manifest`: the manifest holds the hash only, and the key it printed is the one indexed', async () => {
    const made = await tollgate(
      'key',
      'manifest',
      '--module',
      'platform',
      '--role',
      'viewer',
      '--role',
      'datasets:editor',
      '--owner',
      'alice',
      '--name',
      'from git',
      '--namespace',
      ns,
    );
    const key = made.stderr.trim();
    expect(key).toMatch(/^tgp_[0-9A-Za-z]{36}$/);
    expect(made.stdout).not.toContain(key);
    const manifest = parse(made.stdout) as { metadata: { name: string }; spec: Record<string, unknown> };
    expect(manifest.spec).toEqual({
      hash: hashKey(key),
      start: key.slice(0, 8),
      module: 'platform',
      roles: ['viewer', 'datasets:editor'],
      owner: 'alice',
      name: 'from git',
    });
    const file = path.join(folder, 'from-cli.yaml');
    await writeFile(file, made.stdout);
    await c.kubectl('apply', '-f', file);
    expect(await eventually(() => grantOf(hashKey(key)), 'the key indexed')).toMatchObject({
      owner: 'alice',
      module: 'platform',
      roles: ['viewer', 'datasets:editor'],
      name: 'from git',
    });

    // A bda key names one workflow: said plainly, with nothing made.
    const refused = await tollgate(
      'key',
      'manifest',
      '--module',
      'bda',
      '--role',
      'wf-a',
      '--role',
      'wf-b',
      '--owner',
      'alice',
    ).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect(refused.stderr).toMatch(/exactly one --role/);
  });

  test('deleted before its finalizer lands: the entry goes on the delete event, and every gateway is told', async () => {
    const announced = await listen(redisUrl, redisChannels.keys);
    const k = apiKeyBody('bda');
    const file = path.join(folder, `held-${k.id}.yaml`);
    await writeFile(file, stringify(manifest(k, { [HOLD_LABEL]: 'true' })));
    await c.kubectl('apply', '-f', file);
    expect(await eventually(() => grantOf(k.hash), 'the held key indexed')).toMatchObject({ id: k.id });
    await eventually(
      async () => announced.messages.includes(keyChangeTag(k.hash)),
      'the new entry announced',
    );
    // Held by the policy: still without its finalizer.
    expect(await finalizersOf(k.id)).toEqual([]);

    announced.messages.length = 0;
    await c.kubectl('delete', '-f', file);
    expect(await gone(k.id)).toBe(true);
    await eventually(async () => (await grantOf(k.hash)) === undefined, 'the entry removed');
    await eventually(
      async () => announced.messages.includes(keyChangeTag(k.hash)),
      'the removal announced to the gateways',
    );
    announced.close();
  });

  test('replaced under its name with another hash (kubectl replace --force) before its finalizer lands: the old key stops working', async () => {
    const first = apiKeyBody('bda');
    const file = path.join(folder, `replaced-${first.id}.yaml`);
    await writeFile(file, stringify(manifest(first, { [HOLD_LABEL]: 'true' })));
    await c.kubectl('apply', '-f', file);
    await eventually(() => grantOf(first.hash), 'the first key indexed');
    // The same name, another key: the CRD refuses a new hash, so GitOps tools delete and re-create.
    const second = apiKeyBody('bda');
    const again = manifest(second, { [HOLD_LABEL]: 'true' });
    await writeFile(file, stringify({ ...again, metadata: { ...again.metadata, name: `key-${first.id}` } }));
    await c.kubectl('replace', '--force', '-f', file);
    expect(await eventually(() => grantOf(second.hash), 'the second key indexed')).toMatchObject({
      id: first.id,
    });
    await eventually(async () => (await grantOf(first.hash)) === undefined, 'the first key’s entry removed');
  });

  test('deleted while the operator was down: the start-up sweep removes its entry', async () => {
    const k = apiKeyBody('bda');
    const kept = apiKeyBody('bda');
    const file = path.join(folder, `down-${k.id}.yaml`);
    await writeFile(
      file,
      [manifest(k, { [HOLD_LABEL]: 'true' }), manifest(kept)].map((d) => stringify(d)).join('---\n'),
    );
    await c.kubectl('apply', '-f', file);
    await eventually(() => grantOf(k.hash), 'the held key indexed');
    await eventually(() => grantOf(kept.hash), 'the other key indexed');

    await operator!.stop();
    operator = undefined;
    // No finalizer holds it: the key is gone at once, with nobody there to remove its entry.
    await c.custom.deleteNamespacedCustomObject({ ...keyRef, namespace: ns, name: `key-${k.id}` });
    expect(await gone(k.id)).toBe(true);
    expect(await grantOf(k.hash)).toMatchObject({ id: k.id });

    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
    await eventually(async () => (await grantOf(k.hash)) === undefined, 'the stale entry swept');
    expect(await grantOf(kept.hash)).toMatchObject({ id: kept.id });
  });
});
