import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ManifestDir } from '../../../common/resources/manifest-dir.js';
import {
  SERVICES_PLURAL,
  WorkflowServiceManifests,
  workflowServiceManifestSchema,
  workflowServiceName,
  type WorkflowService,
} from '../../../common/resources/workflow-service.js';
import { WORKFLOW_PLURAL, workflowSchema, type Workflow } from '../../../common/resources/workflow.js';
import {
  annotatedServiceAddress,
  clusterServiceAddress,
  serviceClaim,
  workflowRoute,
} from '../../../operator/controllers/workflow-service-controller.js';

describe('workflow service manifests (standalone `tollgate route add`)', () => {
  let root: string;
  let services: WorkflowServiceManifests;
  const invalid: string[] = [];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'tollgate-wfsvc-'));
    const dir = new ManifestDir(root, (file) => invalid.push(file));
    services = new WorkflowServiceManifests(
      dir.collection(SERVICES_PLURAL, workflowServiceManifestSchema),
      dir.collection(WORKFLOW_PLURAL, workflowSchema),
    );
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  const files = async () => (await readdir(join(root, SERVICES_PLURAL))).filter((f) => !f.startsWith('.'));
  const read = async (file: string) =>
    parse(await readFile(join(root, SERVICES_PLURAL, file), 'utf8')) as WorkflowService;
  const records = async () =>
    Promise.all(
      (await readdir(join(root, WORKFLOW_PLURAL)).catch(() => []))
        .filter((f) => !f.startsWith('.'))
        .map(async (f) => parse(await readFile(join(root, WORKFLOW_PLURAL, f), 'utf8')) as Workflow),
    );
  const routeOf = (svc: WorkflowService, owner = 'alice') => {
    const claim = serviceClaim(svc, annotatedServiceAddress);
    return claim && { key: claim.key, route: workflowRoute(svc, claim, owner) };
  };

  it('writes a labelled Service manifest and its workflow’s record, which holds the owner', async () => {
    const name = await services.add({
      workflow: 'Fraud_2',
      service: 'scorer',
      url: 'http://127.0.0.1:9000',
      owner: 'alice',
    });
    expect(await files()).toEqual([`${name}.yaml`]);
    const svc = await read(`${name}.yaml`);
    expect(svc).toMatchObject({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name,
        labels: { 'tollgate.dev/workflow': 'Fraud_2', 'tollgate.dev/service': 'scorer' },
        annotations: { 'tollgate.dev/url': 'http://127.0.0.1:9000' },
      },
    });
    // The owner is the record's, never a label on the Service.
    expect(svc.metadata.labels).not.toHaveProperty('tollgate.dev/owner');
    const [record] = await records();
    expect(record?.spec).toEqual({ workflow: 'Fraud_2', owner: 'alice', namespaces: ['default'] });
    expect(record?.metadata.name).toMatch(/^fraud-2-[0-9a-f]{8}$/);
    expect(routeOf({ ...svc, metadata: { ...svc.metadata, namespace: 'default' } })).toEqual({
      key: 'tg:route:bda:Fraud_2:scorer',
      route: {
        url: 'http://127.0.0.1:9000',
        workflow: 'Fraud_2',
        owner: 'alice',
        source: `service/default/${name}`,
      },
    });
  });

  it('marks a service behind a sidecar, and its route says so', async () => {
    const name = await services.add({
      workflow: 'wf',
      service: 'guarded',
      url: 'http://127.0.0.1:8081',
      owner: 'alice',
      sidecar: true,
    });
    const svc = await read(`${name}.yaml`);
    expect(svc.metadata.annotations?.['tollgate.dev/sidecar']).toBe('true');
    expect(routeOf(svc)?.route.grantAudience).toBe('urn:tollgate:service:default/wf/guarded');
    const plain = await read(
      `${await services.add({ workflow: 'wf', service: 'open', url: 'http://127.0.0.1:1', owner: 'alice' })}.yaml`,
    );
    expect(routeOf(plain)?.route).not.toHaveProperty('grantAudience');
  });

  it('updates the same service in place, and adds services to a workflow of the same owner', async () => {
    const first = await services.add({
      workflow: 'wf',
      service: 'a',
      url: 'http://127.0.0.1:1',
      owner: 'alice',
    });
    const again = await services.add({
      workflow: 'wf',
      service: 'a',
      url: 'http://127.0.0.1:2',
      owner: 'alice',
    });
    expect(again).toBe(first);
    expect((await read(`${first}.yaml`)).metadata.annotations?.['tollgate.dev/url']).toBe(
      'http://127.0.0.1:2',
    );
    await services.add({ workflow: 'wf', service: 'b', url: 'http://127.0.0.1:3', owner: 'alice' });
    expect(await files()).toHaveLength(2);
  });

  it('refuses a service in another owner’s workflow, and writes nothing', async () => {
    await services.add({ workflow: 'wf', service: 'a', url: 'http://127.0.0.1:1', owner: 'alice' });
    await expect(
      services.add({ workflow: 'wf', service: 'b', url: 'http://127.0.0.1:1', owner: 'mallory' }),
    ).rejects.toMatchObject({ status: 409, code: 'workflow_owned_by_another_user', field: 'workflow' });
    expect(await files()).toHaveLength(1);
    expect((await records()).map((r) => r.spec.owner)).toEqual(['alice']);
  });

  it('refuses ids that could cross paths or Redis keys, and URLs that are not http', async () => {
    const base = { workflow: 'ok', service: 'ok', url: 'http://127.0.0.1:1', owner: 'alice' };
    for (const bad of [
      { workflow: '..' },
      { workflow: 'a/b' },
      { workflow: 'a:b' },
      { service: '.' },
      { service: '' },
      { service: 'x'.repeat(64) },
      { url: 'file:///etc/passwd' },
      { url: 'not a url' },
      { owner: '' },
    ]) {
      await expect(services.add({ ...base, ...bad })).rejects.toThrow();
    }
    await expect(files()).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('removes a service, and the workflow’s record with its last one; says when there was none', async () => {
    await services.add({ workflow: 'wf', service: 'a', url: 'http://127.0.0.1:1', owner: 'alice' });
    await services.add({ workflow: 'wf', service: 'b', url: 'http://127.0.0.1:1', owner: 'alice' });
    expect(await services.remove('wf', 'a')).toBe(true);
    expect(await records()).toHaveLength(1);
    expect(await services.remove('wf', 'b')).toBe(true);
    expect(await files()).toEqual([]);
    expect(await records()).toEqual([]);
    expect(await services.remove('wf', 'a')).toBe(false);
    // Free again: another user may now take the id.
    await services.add({ workflow: 'wf', service: 'a', url: 'http://127.0.0.1:1', owner: 'mallory' });
    expect((await records()).map((r) => r.spec.owner)).toEqual(['mallory']);
  });

  it('names distinct (workflow, service) pairs distinctly, as valid resource names', () => {
    const names = [
      workflowServiceName('a-b', 'c'),
      workflowServiceName('a', 'b-c'),
      workflowServiceName('A', 'b'),
      workflowServiceName('a', 'b'),
    ];
    expect(new Set(names).size).toBe(4);
    for (const n of names) expect(n).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
  });
});

describe('where a workflow Service routes', () => {
  const svc = (over: Partial<WorkflowService['metadata']>, ports?: Array<{ name?: string; port: number }>) =>
    ({
      metadata: {
        name: 'scorer',
        namespace: 'team',
        labels: { 'tollgate.dev/workflow': 'fraud', 'tollgate.dev/service': 'score' },
        ...over,
      },
      ...(ports ? { spec: { clusterIP: '10.96.0.17', selector: { app: 'scorer' }, ports } } : {}),
    }) as WorkflowService;

  it('on a cluster: its cluster IP and the chosen port, never its name; never a URL annotation', () => {
    const ports = [
      { name: 'metrics', port: 9100 },
      { name: 'http', port: 8000 },
    ];
    expect(serviceClaim(svc({}, ports), clusterServiceAddress)?.url).toBe('http://10.96.0.17:8000');
    expect(
      serviceClaim(svc({ annotations: { 'tollgate.dev/port': 'metrics' } }, ports), clusterServiceAddress)
        ?.url,
    ).toBe('http://10.96.0.17:9100');
    expect(
      serviceClaim(
        svc({ annotations: { 'tollgate.dev/url': 'http://169.254.169.254' } }, ports),
        clusterServiceAddress,
      )?.url,
    ).toBe('http://10.96.0.17:8000');
    expect(serviceClaim(svc({}), clusterServiceAddress)).toBeUndefined();
    // An ExternalName Service (a DNS alias to any host) is never routed, nor a headless one (its
    // name is DNS records too); an IPv6 cluster IP is bracketed.
    const alias = { ...svc({}, ports), spec: { type: 'ExternalName', externalName: 'elsewhere', ports } };
    expect(serviceClaim(alias, clusterServiceAddress)).toBeUndefined();
    const selector = { app: 'scorer' };
    const flipped = {
      ...svc({}, ports),
      spec: { type: 'ExternalName', clusterIP: '10.96.0.17', selector, ports },
    };
    expect(serviceClaim(flipped, clusterServiceAddress)).toBeUndefined();
    const headless = { ...svc({}, ports), spec: { clusterIP: 'None', selector, ports } };
    expect(serviceClaim(headless, clusterServiceAddress)).toBeUndefined();
    const six = {
      ...svc({}, ports),
      spec: { clusterIP: 'fd00:10:96::17', selector: { app: 'scorer' }, ports },
    };
    // No selector: its cluster IP goes wherever its Endpoints say, which a team may have written.
    const manual = { ...svc({}, ports), spec: { clusterIP: '10.96.0.17', ports } };
    expect(serviceClaim(manual, clusterServiceAddress)).toBeUndefined();
    expect(serviceClaim(six, clusterServiceAddress)?.url).toBe('http://[fd00:10:96::17]:8000');
  });

  it('standalone: only a valid http(s) URL annotation, and only ids that fit a path and a Redis key', () => {
    const url = { annotations: { 'tollgate.dev/url': 'http://127.0.0.1:9000' } };
    expect(serviceClaim(svc(url), annotatedServiceAddress)?.url).toBe('http://127.0.0.1:9000');
    expect(serviceClaim(svc({}), annotatedServiceAddress)).toBeUndefined();
    expect(
      serviceClaim(
        svc({ annotations: { 'tollgate.dev/url': 'file:///etc/passwd' } }),
        annotatedServiceAddress,
      ),
    ).toBeUndefined();
    for (const workflow of ['a:b', '../x', 'a/b', '']) {
      expect(
        serviceClaim(
          svc({ ...url, labels: { 'tollgate.dev/workflow': workflow, 'tollgate.dev/service': 'score' } }),
          annotatedServiceAddress,
        ),
      ).toBeUndefined();
    }
  });
});
