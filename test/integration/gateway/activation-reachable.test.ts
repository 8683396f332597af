import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { Redis as RedisClient } from 'ioredis';
import { redisChannels, redisKeys } from '../../../common/redis/schema.js';
import { RouteWriter } from '../../../common/routes/workflow-routes.js';
import { freePort, redis, startMlserver, venv } from '../../harness/index.js';
import { testSealer } from '../signing.js';
import { markIndexBuilt } from '../workflow-route.js';
import { apikey, createKey, redisClient, send, startGateway, type TestGateway } from './support.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

/**
 * A route that says a woken model is ready is not yet an address that takes connections (on a
 * cluster: kube-proxy has not got the endpoint, the name is cached as missing, the bridge does not
 * know the pod). Held calls go only once it does; until then they wait, within the activation
 * timeout. The network's lag is played by a TCP relay to a real MLServer that opens late.
 */
describe('a woken model is called once its address takes connections', () => {
  const model = 'model-late';
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-late-'));
  let gw: TestGateway;
  let r: Redis;
  let listener: Redis;
  let ml: Awaited<ReturnType<typeof startMlserver>>;
  let relay: Server | undefined;
  const sockets = new Set<Socket>();
  let expected: { rows: number[][]; predictions: number[] };

  /** Opens `port` as a relay to the runtime: the moment the network starts passing the calls. */
  function openRelay(port: number): void {
    const target = new URL(ml.url);
    relay = createServer((inbound) => {
      const outbound = connect(Number(target.port), target.hostname);
      for (const s of [inbound, outbound]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    relay.listen(port, '127.0.0.1');
  }

  beforeAll(async () => {
    await run(venv().python, [join(here, '..', 'harness', 'fixtures', 'train_iris.py'), dir, model]);
    expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as typeof expected;
    ml = await startMlserver(dir);
    const info = await redis('activation-reachable');
    r = redisClient(info.url);
    listener = new RedisClient(info.url);
    await markIndexBuilt(r);
    gw = await startGateway({ redisUrl: info.url });
  });

  afterAll(async () => {
    await gw.stop();
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => (relay === undefined ? resolve(undefined) : relay.close(resolve)));
    await ml.stop();
    listener.disconnect();
    r.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  const inferBody = () =>
    JSON.stringify({
      inputs: [
        { name: 'input-0', datatype: 'FP64', shape: [expected.rows.length, 4], data: expected.rows.flat() },
      ],
    });

  it('holds the calls while the ready route’s address refuses, and answers them when it opens', async () => {
    const writer = new RouteWriter(r, await testSealer());
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    await writer.put(redisKeys.modelRoute(model), {
      url,
      source: `model/test/${model}`,
      cold: true,
      activationTimeoutSeconds: 20,
    });
    // The operator's part: on the wake-up the route says ready at once; the address opens 3.5 s
    // later, past the 2.5 s a refused connection is tried again for.
    const woken: number[] = [];
    let openedRelay = false;
    await listener.subscribe(redisChannels.modelWake);
    listener.on('message', () => {
      if (woken.length > 0) return;
      woken.push(performance.now());
      void writer.put(redisKeys.modelRoute(model), { url, source: `model/test/${model}` });
      setTimeout(() => {
        openedRelay = true;
        openRelay(port);
      }, 3_500);
    });

    const { key } = await createKey(r, 'platform', ['models:inference']);
    // Each answer notes whether the address had opened by then: held, not refused early.
    const answers = await Promise.all(
      Array.from({ length: 3 }, () =>
        send(gw.url, `/v2/models/${model}/infer`, {
          method: 'POST',
          headers: { ...apikey(key), 'content-type': 'application/json' },
          body: inferBody(),
        }).then((a) => ({ ...a, afterOpen: openedRelay })),
      ),
    );
    expect(answers.map((a) => [a.status, a.json.code])).toEqual([
      [200, undefined],
      [200, undefined],
      [200, undefined],
    ]);
    for (const a of answers)
      expect((a.json.outputs as Array<{ data: number[] }>)[0]!.data).toEqual(expected.predictions);
    expect(woken).toHaveLength(1);
    expect(answers.map((a) => a.afterOpen)).toEqual([true, true, true]);
  });

  it('answers 503 model_scaling_up when the address never opens within the activation timeout', async () => {
    const other = 'model-never';
    const port = await freePort();
    const writer = new RouteWriter(r, await testSealer());
    // Ready in the route, and nothing ever listens there.
    await writer.put(redisKeys.modelRoute(other), {
      url: `http://127.0.0.1:${port}`,
      source: `model/test/${other}`,
      cold: true,
      activationTimeoutSeconds: 2,
    });
    await listener.subscribe(redisChannels.modelWake);
    listener.on('message', (_channel: string, message: string) => {
      if ((JSON.parse(message) as { model: string }).model === other)
        void writer.put(redisKeys.modelRoute(other), {
          url: `http://127.0.0.1:${port}`,
          source: `model/test/${other}`,
          activationTimeoutSeconds: 2,
        });
    });
    const { key } = await createKey(r, 'platform', ['models:inference']);
    const answer = await send(gw.url, `/v2/models/${other}/infer`, {
      method: 'POST',
      headers: { ...apikey(key), 'content-type': 'application/json' },
      body: inferBody(),
    });
    expect([answer.status, answer.json.code, answer.headers['retry-after']]).toEqual([
      503,
      'model_scaling_up',
      '5',
    ]);
    expect(answer.json.error).toMatch(/model 'model-never' is starting a replica/);
  });
});
