import { Redis } from 'ioredis';
import { redisChannels, redisKeys } from '../../../common/redis/schema.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { redis } from '../../harness/index.js';
import { testSealer } from '../signing.js';
import {
  apikey,
  createKey,
  redisClient,
  registerService,
  send,
  startGateway,
  startUpstream,
  type TestGateway,
  type Upstream,
} from './support.js';

/**
 * A team may label a Service of its own with any service id, a model's name too. Its calls are
 * then its own Service's: never the model's runtime, never a wake-up of another team's model at
 * zero. Only a route the operator wrote for a Model is inference.
 */
describe('a workflow service named like another workflow’s model', () => {
  const victim = 'model-victim';
  let gw: TestGateway;
  let r: Redis;
  let listener: Redis;
  let own: Upstream;
  let theirs: Upstream;
  const wakes: string[] = [];

  beforeAll(async () => {
    const info = await redis('workflow-model-name');
    r = redisClient(info.url);
    listener = new Redis(info.url);
    await listener.subscribe(redisChannels.modelWake);
    listener.on('message', (_channel: string, message: string) => wakes.push(message));
    own = await startUpstream();
    theirs = await startUpstream();
    // The victim's model, of workflow wf-b, at zero and with versions.
    await new RouteWriter(r, await testSealer()).put(redisKeys.modelRoute(victim), {
      url: theirs.url,
      source: `model/team-b/${victim}`,
      workflow: 'wf-b',
      owner: 'bob',
      cold: true,
      versions: [{ name: '1', url: theirs.url, percent: 100, cold: true }],
    });
    // The attacker's Service in its own namespace, labelled as wf-a's service "model-victim".
    await registerService(r, 'wf-a', victim, own.url);
    gw = await startGateway({ redisUrl: info.url });
  });

  afterAll(async () => {
    await gw.stop();
    await own.close();
    await theirs.close();
    listener.disconnect();
    r.disconnect();
  });

  it('reaches the team’s own Service as a plain call, and wakes nothing', async () => {
    const { key } = await createKey(r, 'bda', ['wf-a']);
    const body = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP64', shape: [1], data: [1] }] });
    const answer = await send(gw.url, `/events/bda/wf-a/${victim}/v2/models/${victim}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body,
    });
    expect(answer.status).toBe(200);
    expect(own.seen.map((s) => [s.method, s.url, s.body.toString()])).toEqual([
      ['POST', `/v2/models/${victim}/infer`, body],
    ]);
    expect(theirs.seen).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(wakes).toEqual([]);
  });
});
