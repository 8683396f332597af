import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { stringify } from 'yaml';
import { generateKey, hashKey, keyStart } from '../common/apikey/format.js';
import { freePort } from '../common/net/free-port.js';
import { redisKeys } from '../common/redis/schema.js';
import { newApiKey, newKeyId } from '../common/resources/apikey.js';
import { RouteWriter } from '../common/routes/workflow-routes.js';
import { testSealer } from '../test/integration/signing.js';
import { startGateway } from './fleet.js';
import { start, stop, UPSTREAM, waitFor } from './support.js';

const NAMESPACE = 'scale-git';
const WORKFLOW = 'git-wf';
const OWNER = 'git-user';

/**
 * Keys kept in Git, as a user applies them: a folder of one manifest per ApiKey (the hash, never
 * the key), `kubectl apply -f <folder>` with the real kubectl while the operator runs, and a gateway
 * asked with the key of the last manifest kubectl applies until it answers 200; then every key.
 */
export async function keysInGit(o: {
  kubectl: string;
  kubeconfig: string;
  redisUrl: string;
  startOperator: (
    namespace: string,
  ) => Promise<{ marked(limitMs: number): Promise<number>; stop(): Promise<void> }>;
  keys: number;
}): Promise<{ keys: number; applySeconds: number; lastAnsweredSeconds: number; answered: number }> {
  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-bench-git-'));
  const redis = new Redis(o.redisUrl);
  const agent = new Agent({ connections: 32 });
  const procs: Array<ReturnType<typeof start>> = [];
  execFileSync(o.kubectl, ['--kubeconfig', o.kubeconfig, 'create', 'namespace', NAMESPACE], {
    stdio: 'ignore',
  });
  const operator = await o.startOperator(NAMESPACE);
  try {
    await operator.marked(60_000);
    const upstreamPort = await freePort();
    procs.push(start('upstream', process.execPath, ['-e', UPSTREAM], { PORT: String(upstreamPort) }));
    await waitFor(`http://127.0.0.1:${upstreamPort}/`);
    await new RouteWriter(redis, await testSealer()).put(redisKeys.bdaRoute(WORKFLOW, 'svc'), {
      url: `http://127.0.0.1:${upstreamPort}`,
      owner: OWNER,
      workflow: WORKFLOW,
    });
    const port = await freePort();
    procs.push(startGateway('gateway', { ...o, namespace: NAMESPACE }, port));
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`${base}/healthz`, {}, 200, 60_000);

    // One file per key, as a repository keeps them; kubectl applies a folder's files in name order.
    const folder = path.join(work, 'apikeys');
    await mkdir(folder);
    const made: Array<{ file: string; key: string }> = [];
    for (let i = 0; i < o.keys; i++) {
      const key = generateKey('bda');
      const k = newApiKey(newKeyId(), {
        hash: hashKey(key),
        start: keyStart(key),
        module: 'bda',
        roles: [WORKFLOW],
        owner: OWNER,
      });
      const file = `${k.metadata.name}.yaml`;
      await writeFile(
        path.join(folder, file),
        stringify({ ...k, metadata: { ...k.metadata, namespace: NAMESPACE } }),
      );
      made.push({ file, key });
    }
    made.sort((a, b) => (a.file < b.file ? -1 : 1));
    const call = async (key: string): Promise<number> => {
      const res = await request(`${base}/events/bda/${WORKFLOW}/svc/`, {
        dispatcher: agent,
        headers: { authorization: `Apikey ${key}` },
      });
      await res.body.dump();
      return res.statusCode;
    };

    const began = performance.now();
    const applied = new Promise<number>((resolve, reject) => {
      const child = spawn(o.kubectl, ['--kubeconfig', o.kubeconfig, 'apply', '-f', folder], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
      child.once('exit', (code) =>
        code === 0
          ? resolve((performance.now() - began) / 1000)
          : reject(new Error(`kubectl apply exited with ${code}: ${err}`)),
      );
    });
    applied.catch(() => undefined);
    const last = made.at(-1)!.key;
    while ((await call(last)) !== 200) await new Promise((r) => setTimeout(r, 100));
    const lastAnsweredSeconds = (performance.now() - began) / 1000;
    const applySeconds = await applied;

    let answered = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < made.length) {
          const { key } = made[next++]!;
          if ((await call(key)) === 200) answered++;
        }
      }),
    );
    return { keys: o.keys, applySeconds, lastAnsweredSeconds, answered };
  } finally {
    for (const p of procs) await stop(p);
    await operator.stop();
    await agent.close();
    redis.disconnect();
    await rm(work, { recursive: true, force: true });
  }
}
