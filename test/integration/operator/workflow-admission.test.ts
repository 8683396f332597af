import { Redis } from 'ioredis';
import { redisKeys } from '../../../common/redis/schema.js';
import type { OperatorManager } from '../../../operator/manager.js';
import { redis } from '../../harness/index.js';
import {
  cluster,
  type Cluster,
  createModel,
  createWorkflow,
  deleteWorkflow,
  eventsFor,
  eventually,
  modelFolder,
  namespace,
  npSettings,
  removeModelFolders,
  setDeploymentReady,
  startOperator,
  uniqueWorkflow,
  workflowRef,
} from './support.js';
import { openSealed } from '../signing.js';

afterAll(removeModelFolders);

const TAG = 'operator-workflows';

/**
 * A Service's labels only ask for a workflow route: the operator routes it when the workflow's
 * Workflow record (cluster-scoped, an administrator's) admits its namespace, with the record's
 * owner, and gives a contested route to the oldest claim. On the harness API server, with the
 * operator scoped to one namespace as a team's tenant would meet it.
 */
describe('workflow routes are admitted by Workflow records, never by labels', () => {
  let c: Cluster;
  let ns: string;
  let client: Redis;
  let operator: OperatorManager | undefined;
  let redisUrl: string;

  beforeAll(async () => {
    c = await cluster();
    ns = await namespace(c, 'op-wf');
    redisUrl = (await redis(TAG)).url;
    client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
  });
  afterAll(async () => {
    await operator?.stop();
    client?.disconnect();
    c?.kc.close();
  });

  const service = (name: string, workflow: string, svc: string, labels: Record<string, string> = {}) =>
    c.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: {
          name,
          labels: { 'tollgate.dev/workflow': workflow, 'tollgate.dev/service': svc, ...labels },
        },
        spec: { selector: { app: name }, ports: [{ name: 'http', port: 8000 }] },
      },
    });
  const route = async (workflow: string, svc: string) => {
    const key = redisKeys.bdaRoute(workflow, svc);
    const raw = await client.get(key);
    return raw === null ? undefined : ((await openSealed(key, raw)) as Record<string, unknown>);
  };
  const reasons = async (name: string) => (await eventsFor(c, ns, name)).map((e) => `${e.type}/${e.reason}`);
  /** Long enough for the operator to have acted on a change it would act on (it acts in ms). */
  const settle = () => new Promise((r) => setTimeout(r, 1_500));

  test('no record: a labelled Service (with any owner label it likes) is not routed, and is told why', async () => {
    const wf = uniqueWorkflow('unclaimed');
    await service('squatter', wf, 'api', { 'tollgate.dev/owner': 'mallory' });
    await eventually(
      async () => (await reasons('squatter')).includes('Warning/WorkflowNotAdmitted'),
      'the Event',
    );
    const [event] = (await eventsFor(c, ns, 'squatter')).filter((e) => e.reason === 'WorkflowNotAdmitted');
    expect(event?.message).toContain(`no Workflow resource lets namespace '${ns}' serve workflow '${wf}'`);
    expect(await route(wf, 'api')).toBeUndefined();

    // The administrator creates the record for alice: routed, and the owner is the record's.
    await createWorkflow(c, wf, 'alice', [ns]);
    const routed = await eventually(() => route(wf, 'api'), 'the route');
    const ip = (await c.core.readNamespacedService({ namespace: ns, name: 'squatter' })).spec?.clusterIP;
    expect(routed).toEqual({
      url: `http://${ip}:8000`,
      workflow: wf,
      owner: 'alice',
      source: `service/${ns}/squatter`,
    });
    await eventually(async () => (await reasons('squatter')).includes('Normal/Routed'), 'the Routed Event');

    // The record goes: so does the route.
    await deleteWorkflow(c, wf);
    await eventually(async () => (await route(wf, 'api')) === undefined, 'the route gone');
  });

  test('a routed Service its namespace turns into an alias (ExternalName) or a headless one loses its route and is told why', async () => {
    const wf = uniqueWorkflow('alias');
    await createWorkflow(c, wf, 'alice', [ns]);
    await service('aliased', wf, 'api');
    const ip = (await c.core.readNamespacedService({ namespace: ns, name: 'aliased' })).spec?.clusterIP;
    await eventually(
      async () => (await route(wf, 'api'))?.url === `http://${ip}:8000` || undefined,
      'routed',
    );
    await c.core.patchNamespacedService({
      namespace: ns,
      name: 'aliased',
      body: [
        { op: 'replace', path: '/spec/type', value: 'ExternalName' },
        { op: 'add', path: '/spec/externalName', value: 'redis.tollgate.svc.cluster.local' },
      ],
    });
    await eventually(async () => (await route(wf, 'api')) === undefined, 'the route gone');
    await eventually(async () => (await reasons('aliased')).includes('Warning/NoAddress'), 'the Event');

    await c.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: {
          name: 'headless',
          labels: { 'tollgate.dev/workflow': wf, 'tollgate.dev/service': 'other' },
        },
        spec: { clusterIP: 'None', selector: { app: 'x' }, ports: [{ name: 'http', port: 8000 }] },
      },
    });
    await eventually(async () => (await reasons('headless')).includes('Warning/NoAddress'), 'the Event');
    expect(await route(wf, 'other')).toBeUndefined();
    // No selector: its cluster IP goes where its Endpoints say, which some clusters let a team write.
    await c.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: {
          name: 'manual',
          labels: { 'tollgate.dev/workflow': wf, 'tollgate.dev/service': 'third' },
        },
        spec: { ports: [{ name: 'http', port: 8000 }] },
      },
    });
    await eventually(async () => (await reasons('manual')).includes('Warning/NoAddress'), 'the Event');
    expect(await route(wf, 'third')).toBeUndefined();
    await deleteWorkflow(c, wf);
  });

  test('a record that does not name the namespace: not routed, told as if none existed; naming it routes', async () => {
    const wf = uniqueWorkflow('elsewhere');
    await createWorkflow(c, wf, 'alice', ['team-a']);
    await service('intruder', wf, 'api');
    await eventually(
      async () => (await reasons('intruder')).includes('Warning/WorkflowNotAdmitted'),
      'the Event',
    );
    const [event] = (await eventsFor(c, ns, 'intruder')).filter((e) => e.reason === 'WorkflowNotAdmitted');
    // Word for word what a workflow with no record gets: whether the id exists, and whose
    // namespaces serve it, are other teams' business.
    expect(event?.message).toBe(
      `no Workflow resource lets namespace '${ns}' serve workflow '${wf}'; an administrator names the workflow in one (spec.workflow, spec.owner) and lists '${ns}' in its spec.namespaces`,
    );
    await settle();
    expect(await route(wf, 'api')).toBeUndefined();

    await c.custom.patchClusterCustomObject({
      ...workflowRef,
      name: wf,
      body: [{ op: 'replace', path: '/spec/namespaces', value: ['team-a', ns] }],
    });
    expect(await eventually(() => route(wf, 'api'), 'the route')).toMatchObject({ owner: 'alice' });
    // And taken back: the namespace struck off the record loses the route.
    await c.custom.patchClusterCustomObject({
      ...workflowRef,
      name: wf,
      body: [{ op: 'replace', path: '/spec/namespaces', value: ['team-a'] }],
    });
    await eventually(async () => (await route(wf, 'api')) === undefined, 'the route gone');
    await deleteWorkflow(c, wf);
  });

  test('two Services claim one workflow service: the oldest keeps it, the other is told; it takes over when the first goes', async () => {
    const wf = uniqueWorkflow('contested');
    await createWorkflow(c, wf, 'alice', [ns]);
    await service('first', wf, 'api');
    await eventually(() => route(wf, 'api'), 'the first route');
    // Creation times are to the second: the second claim is made in a later one.
    await new Promise((r) => setTimeout(r, 1_100));
    await service('second', wf, 'api');
    await eventually(
      async () => (await reasons('second')).includes('Warning/RouteClaimedByOlderService'),
      'the conflict Event',
    );
    const [event] = (await eventsFor(c, ns, 'second')).filter(
      (e) => e.reason === 'RouteClaimedByOlderService',
    );
    expect(event?.message).toContain(`Service ${ns}/first claimed workflow '${wf}' service 'api' first`);
    await settle();
    expect(await route(wf, 'api')).toMatchObject({ source: `service/${ns}/first` });

    await c.core.deleteNamespacedService({ namespace: ns, name: 'first' });
    await eventually(
      async () => (await route(wf, 'api'))?.source === `service/${ns}/second`,
      'the route handed to the second',
    );
    await deleteWorkflow(c, wf);
  });

  test('an older Service labelled later does not take a held route, even from a restarted operator', async () => {
    const wf = uniqueWorkflow('relabelled');
    await createWorkflow(c, wf, 'alice', [ns]);
    // A Service made long ago for something else, as every namespace has.
    await c.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: 'long-ago' },
        spec: { selector: { app: 'other' }, ports: [{ name: 'http', port: 8000 }] },
      },
    });
    await new Promise((r) => setTimeout(r, 1_100));
    await service('holder', wf, 'api');
    await eventually(async () => (await route(wf, 'api'))?.source === `service/${ns}/holder`, 'routed');
    // Labelled today to claim the route: older as an object, newer as a claim.
    await c.core.patchNamespacedService({
      namespace: ns,
      name: 'long-ago',
      body: [
        {
          op: 'add',
          path: '/metadata/labels',
          value: { 'tollgate.dev/workflow': wf, 'tollgate.dev/service': 'api' },
        },
      ],
    });
    await eventually(
      async () => (await reasons('long-ago')).includes('Warning/RouteClaimedByOlderService'),
      'the conflict Event',
    );
    await settle();
    expect(await route(wf, 'api')).toMatchObject({ source: `service/${ns}/holder` });
    // A new operator process learns the holder from the route.
    await operator?.stop();
    operator = startOperator(c, ns, redisUrl);
    await operator.start();
    await operator.synced();
    await settle();
    expect(await route(wf, 'api')).toMatchObject({ source: `service/${ns}/holder` });
    // The holder gone, the other claim takes the route.
    await c.core.deleteNamespacedService({ namespace: ns, name: 'holder' });
    await eventually(
      async () => (await route(wf, 'api'))?.source === `service/${ns}/long-ago`,
      'the route handed on',
    );
    await deleteWorkflow(c, wf);
  });

  test('a Model naming a workflow gets its bda route only where the record admits its namespace', async () => {
    const wf = uniqueWorkflow('models');
    const name = 'model-wf';
    const dir = await modelFolder({ 'model-settings.json': npSettings(name), 'model.joblib': 'x' });
    await createModel(c, ns, name, { storageUri: `file://${dir}`, workflow: wf });
    await eventually(() => c.apps.readNamespacedDeployment({ namespace: ns, name }), 'the Deployment');
    await setDeploymentReady(c, ns, name, 1);
    // Its own route, but none under a workflow with no record.
    await eventually(
      () => client.get(redisKeys.modelRoute(name)).then((v) => v ?? undefined),
      'the model route',
    );
    await eventually(async () => (await reasons(name)).includes('Warning/WorkflowNotAdmitted'), 'the Event');
    expect(await route(wf, name)).toBeUndefined();
    // Nor does its own route name the workflow: that workflow's bda keys cannot call it.
    const own = async () => {
      const raw = await client.get(redisKeys.modelRoute(name));
      return raw === null
        ? undefined
        : ((await openSealed(redisKeys.modelRoute(name), raw)) as Record<string, unknown>);
    };
    expect(await own()).not.toHaveProperty('workflow');

    await createWorkflow(c, wf, 'alice', [ns]);
    expect(await eventually(() => route(wf, name), 'the bda route')).toMatchObject({
      workflow: wf,
      owner: 'alice',
      source: `model/${ns}/${name}`,
    });
    expect(await own()).toMatchObject({ workflow: wf });
    await deleteWorkflow(c, wf);
    await eventually(async () => (await route(wf, name)) === undefined, 'the bda route gone');
    expect(await client.exists(redisKeys.modelRoute(name))).toBe(1);
  });
});
