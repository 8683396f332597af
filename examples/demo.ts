/**
 * `make demo`: Tollgate on one machine, end to end. Installs what is missing (the Python venv with
 * MLServer, redis-server), starts a local Redis, a sample platform resource (`datasets`) and a
 * sample workflow service (`fraud`/`scorer`), trains and publishes the example models (file://
 * storage), starts `tollgate dev`, registers the workflow service with `tollgate route add`,
 * creates keys through the management API, writes `.tollgate/demo/env` for a shell (the README's
 * walkthrough, README and docs/, runs against it), and runs one inference of each kind through the gateway. Then it
 * keeps running until Ctrl-C (or exits at once with DEMO_EXIT_AFTER_RUN=1) and stops all it started.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEMO_ENV_FILE } from '../cli/state-dir.js';
import { freePort } from '../common/net/free-port.js';
import { throwawayRedisArgs } from '../common/redis/throwaway-args.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const STATE = path.join(ROOT, '.tollgate', 'demo');
const MODELS = path.join(ROOT, 'examples', 'models');
const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const MLSERVER = path.join(ROOT, '.venv', 'bin', 'mlserver');
const CASES: Array<{ name: string; what: string }> = [
  { name: 'model-iris', what: 'numeric tabular (np), classifier with predict + predict_proba' },
  { name: 'model-diabetes', what: 'numeric tabular (np), regressor; declares an output it never produces' },
  { name: 'model-rent', what: 'string and mixed columns (pd), one BYTES input per column' },
  { name: 'model-reviews', what: 'raw text (str), TF-IDF + logistic regression' },
  { name: 'model-digits', what: 'an image as BYTES with base64 (PNG files)' },
  { name: 'model-wine', what: 'an MLflow model with a signature, no settings file' },
];
const READY_TIMEOUT_MS = 240_000;
const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const CLI = path.join(ROOT, 'bin', 'tollgate.js');
const ENV_FILE = path.join(ROOT, DEMO_ENV_FILE);
// The manual's walkthrough is alice's: her workflow `fraud` has the sample service `scorer` and
// the iris model.
const USER = 'alice';
const WORKFLOW = 'fraud';
const WORKFLOW_SERVICE = 'scorer';
const WORKFLOW_MODEL = 'model-iris';

const children: ChildProcess[] = [];
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const step = (line: string): void => say(`\n\u25b8 ${line}`);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  proc?: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc !== undefined && proc.exitCode !== null)
      throw new Error(`${what}: the process exited (${proc.exitCode})`);
    if (await probe().catch(() => false)) return;
    await sleep(300);
  }
  throw new Error(`${what} not ready after ${timeoutMs / 1000} s`);
}

function installMissing(): void {
  if (!existsSync(MLSERVER)) {
    step('installing the Python venv (MLServer, scikit-learn, MLflow): once per machine');
    execFileSync('bash', [path.join(ROOT, 'test/harness/install.sh'), 'venv'], { stdio: 'inherit' });
  }
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
  } catch {
    step('installing redis-server');
    execFileSync('bash', [path.join(ROOT, 'test/harness/install.sh'), 'apt'], { stdio: 'inherit' });
  }
}

function start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const log = openSync(path.join(STATE, `${name}.log`), 'w');
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', log, log],
  });
  children.push(child);
  return child;
}

async function stopAll(): Promise<void> {
  // The CLI takes the demo's state directory as its default only while this file exists.
  rmSync(ENV_FILE, { force: true });
  // tollgate dev stops its MLServer processes on SIGTERM; Redis goes last.
  for (const child of [...children].reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function modelManifest(name: string): string {
  return [
    'apiVersion: tollgate.dev/v1alpha1',
    'kind: Model',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    `  storageUri: file://${path.join(MODELS, name)}`,
    // The iris model also serves the demo user's workflow (its record is written by `route add`
    // below), so a bda key can reach it.
    ...(name === WORKFLOW_MODEL ? [`  workflow: ${WORKFLOW}`] : []),
    '',
  ].join('\n');
}

function summarise(answer: { outputs?: Array<{ name: string; shape: number[]; data: unknown[] }> }): string {
  return (answer.outputs ?? [])
    .map((o) => {
      const data = o.data.map((v) =>
        typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(3)) : v,
      );
      const shown =
        data.length > 12 ? `${JSON.stringify(data.slice(0, 12)).slice(0, -1)}, ...]` : JSON.stringify(data);
      return `${o.name} ${JSON.stringify(o.shape)} ${shown}`;
    })
    .join('\n      ');
}

async function main(): Promise<void> {
  const started = Date.now();
  installMissing();
  rmSync(STATE, { recursive: true, force: true });
  mkdirSync(path.join(STATE, 'models'), { recursive: true });

  step('starting a local Redis');
  const redisPort = await freePort();
  const redis = start('redis', 'redis-server', [...throwawayRedisArgs(redisPort), '--dir', STATE]);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  await waitFor(
    'redis',
    async () =>
      execFileSync('redis-cli', ['-p', String(redisPort), 'ping'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .includes('PONG'),
    10_000,
    redis,
  );

  step('starting the sample platform resource `datasets` and the workflow service `fraud/scorer`');
  const datasetsPort = await freePort();
  const scorerPort = await freePort();
  const datasetsUrl = `http://127.0.0.1:${datasetsPort}`;
  const scorerUrl = `http://127.0.0.1:${scorerPort}`;
  const datasets = start('datasets', process.execPath, [
    TSX,
    path.join(ROOT, 'examples/services/datasets.ts'),
    String(datasetsPort),
  ]);
  const scorer = start('scorer', process.execPath, [
    TSX,
    path.join(ROOT, 'examples/services/scorer.ts'),
    String(scorerPort),
  ]);
  await waitFor('datasets', async () => (await fetch(`${datasetsUrl}/api/v1/datasets`)).ok, 30_000, datasets);
  await waitFor('scorer', async () => (await fetch(`${scorerUrl}/health`)).ok, 30_000, scorer);

  step(`training the example models into ${path.relative(ROOT, MODELS)}/`);
  execFileSync(PYTHON, [path.join(ROOT, 'examples/train.py'), '--out', MODELS], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (const { name } of CASES)
    writeFileSync(path.join(STATE, 'models', `${name}.yaml`), modelManifest(name));

  step('starting tollgate dev (gateway + operator; the models share one MLServer process)');
  const [port, grpcPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const dev = start(
    'tollgate-dev',
    process.execPath,
    [
      CLI,
      'dev',
      '--state-dir',
      STATE,
      '--port',
      String(port),
      '--grpc-port',
      String(grpcPort),
      '--redis-url',
      redisUrl,
      '--mlserver',
      MLSERVER,
    ],
    // The platform resource the gateway proxies (models is built in).
    { TOLLGATE_UPSTREAMS: `datasets=${datasetsUrl}` },
  );
  await waitFor('the gateway', async () => (await fetch(`${base}/readyz`)).ok, 30_000, dev);

  // The scorer listens on loopback and answers only through its sidecar, which lets in calls
  // with a fraud key, or with the grant the central gateway signed for a call it already checked.
  step(`guarding ${WORKFLOW}/${WORKFLOW_SERVICE} with \`tollgate sidecar\``);
  const [sidecarPort, sidecarOpsPort] = [await freePort(), await freePort()];
  const guardedUrl = `http://127.0.0.1:${sidecarPort}`;
  const sidecar = start('sidecar', process.execPath, [
    CLI,
    'sidecar',
    '--upstream',
    scorerUrl,
    '--workflow',
    WORKFLOW,
    '--service',
    WORKFLOW_SERVICE,
    '--host',
    '127.0.0.1',
    '--port',
    String(sidecarPort),
    '--operations-port',
    String(sidecarOpsPort),
    '--redis-url',
    redisUrl,
    // What the sidecar believes: the public half of the signing key `tollgate dev` uses.
    '--trusted-keys',
    path.join(STATE, 'trusted-keys.json'),
  ]);
  await waitFor(
    'the sidecar',
    async () => (await fetch(`http://127.0.0.1:${sidecarOpsPort}/readyz`)).ok,
    30_000,
    sidecar,
  );

  step(`registering ${WORKFLOW}/${WORKFLOW_SERVICE} with \`tollgate route add\` (a Service manifest)`);
  execFileSync(process.execPath, [
    CLI,
    'route',
    'add',
    '--workflow',
    WORKFLOW,
    '--service',
    WORKFLOW_SERVICE,
    '--url',
    guardedUrl,
    '--sidecar',
    '--owner',
    USER,
    '--state-dir',
    STATE,
  ]);

  step('creating API keys through the management API (token from `tollgate token`)');
  const token = execFileSync(process.execPath, [CLI, 'token', '--user', USER, '--state-dir', STATE])
    .toString()
    .trim();
  const created = await fetch(`${base}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      module: 'platform',
      roles: ['datasets:viewer', 'models:inference'],
      name: 'demo',
    }),
  });
  const createdBody = (await created.json()) as { key?: string; error?: string };
  if (!created.ok || createdBody.key === undefined)
    throw new Error(`creating the key failed: ${created.status} ${createdBody.error ?? ''}`);
  const key = createdBody.key;
  const auth = { authorization: `Apikey ${key}` };

  step('waiting for every model to be ready');
  await Promise.all(
    CASES.map(({ name }) =>
      waitFor(
        name,
        async () => (await fetch(`${base}/v2/models/${name}/ready`, { headers: auth })).status === 200,
        READY_TIMEOUT_MS,
        dev,
      ),
    ),
  );

  // A workflow is the user's once its route exists, i.e. once its model is ready.
  const bda = await fetch(`${base}/api/v1/apikeys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ module: 'bda', roles: [WORKFLOW], name: 'demo workflow' }),
  });
  const bdaBody = (await bda.json()) as { key?: string; error?: string };
  if (!bda.ok || bdaBody.key === undefined)
    throw new Error(`creating the workflow key failed: ${bda.status} ${bdaBody.error ?? ''}`);
  const bdaKey = bdaBody.key;
  const workflowInfer = `/events/bda/${WORKFLOW}/${WORKFLOW_MODEL}/v2/models/${WORKFLOW_MODEL}/infer`;

  say(`\nReady in ${Math.round((Date.now() - started) / 1000)} s.`);
  say(
    // The token rides in the fragment, which the browser never sends to a server; the panel moves
    // it to session storage and clears the address bar.
    `  Panel (API keys):  ${base}/panel/#token=${token}\n` +
      `                     (a new sign-in token: node bin/tollgate.js token --user demo --state-dir ${path.relative(ROOT, STATE)})`,
  );
  say(`  API key:           ${key}   (platform, datasets:viewer + models:inference)`);
  say(`  Workflow key:      ${bdaKey}   (bda, workflow ${WORKFLOW})`);
  say(
    `  Model manifests:   ${path.relative(ROOT, path.join(STATE, 'models'))}/   logs: ${path.relative(ROOT, STATE)}/*.log`,
  );
  writeFileSync(
    ENV_FILE,
    [
      '# Written by `make demo` while it runs: `source .tollgate/demo/env`, then the README (a first call) and docs/.',
      `export BASE=${base}`,
      `export TOLLGATE=${base}`,
      `export GRPC=127.0.0.1:${grpcPort}`,
      `export KEY=${key}`,
      `export BDA_KEY=${bdaKey}`,
      `export TOLLGATE_STATE_DIR=${STATE}`,
      `export TOLLGATE_REDIS_URL=${redisUrl}`,
      `export SCORER_URL=${guardedUrl}`,
      `export DATASETS_URL=${datasetsUrl}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  say(
    `  Shell:             source ${DEMO_ENV_FILE}   (BASE, KEY, BDA_KEY, TOLLGATE_STATE_DIR, TOLLGATE_REDIS_URL)`,
  );
  say('\nTry it (after the source above; the README and docs/ walk through the rest):');
  say('  curl -s $TOLLGATE/v2/models/model-iris -H "Authorization: Apikey $KEY"');
  say('  curl -s $TOLLGATE/events/platform/api/v1/datasets -H "Authorization: Apikey $KEY"');
  say(
    `  curl -s $TOLLGATE/events/bda/${WORKFLOW}/${WORKFLOW_SERVICE}/score -H "Authorization: Apikey $BDA_KEY" -H 'Content-Type: application/json' -d '{"amount":120.5,"country":"FR"}'`,
  );
  say(
    `  curl -s $TOLLGATE/v2/models/model-iris/infer -H "Authorization: Apikey $KEY" -H 'Content-Type: application/json' -d '{"inputs":[{"name":"features","datatype":"FP32","shape":[1,4],"data":[5.1,3.5,1.4,0.2]}]}'`,
  );
  say(
    `  curl -s $TOLLGATE/v2/models/model-reviews/infer -H "Authorization: Apikey $KEY" -H 'Content-Type: application/json' -d '{"inputs":[{"name":"text","datatype":"BYTES","shape":[1],"data":["works great"],"parameters":{"content_type":"str"}}]}'`,
  );
  say(
    `  curl -s $TOLLGATE/v2/models/model-digits/infer -H "Authorization: Apikey $KEY" -H 'Content-Type: application/json' -d @${path.relative(ROOT, path.join(MODELS, 'requests/model-digits.json'))}`,
  );
  say(`  # the same model as a service of workflow ${WORKFLOW}, with the workflow's bda key:`);
  say(
    `  curl -s $TOLLGATE${workflowInfer} -H "Authorization: Apikey $BDA_KEY" -H 'Content-Type: application/json' -d '{"inputs":[{"name":"features","datatype":"FP32","shape":[1,4],"data":[5.1,3.5,1.4,0.2]}]}'`,
  );
  say('  # a mistake is refused by the gateway with the input and the rule:');
  say(
    `  curl -s $TOLLGATE/v2/models/model-iris/infer -H "Authorization: Apikey $KEY" -H 'Content-Type: application/json' -d '{"inputs":[{"name":"features","datatype":"FP32","shape":[2,4],"data":[1,2,3,4,5,6]}]}'`,
  );

  step('one inference of each kind, through the gateway');
  let failures = 0;
  for (const { name, what } of CASES) {
    const body = readFileSync(path.join(MODELS, 'requests', `${name}.json`));
    const res = await fetch(`${base}/v2/models/${name}/infer`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body,
    });
    const answer = (await res.json()) as {
      outputs?: Array<{ name: string; shape: number[]; data: unknown[] }>;
      error?: string;
    };
    if (!res.ok) failures++;
    say(`  ${name}: ${what}`);
    say(`      ${res.ok ? summarise(answer) : `${res.status} ${answer.error ?? ''}`}`);
  }
  const viaWorkflow = await fetch(`${base}${workflowInfer}`, {
    method: 'POST',
    headers: { authorization: `Apikey ${bdaKey}`, 'content-type': 'application/json' },
    body: readFileSync(path.join(MODELS, 'requests', `${WORKFLOW_MODEL}.json`)),
  });
  if (!viaWorkflow.ok) failures++;
  say(`  ${WORKFLOW_MODEL} as a service of workflow ${WORKFLOW}, with the bda key:`);
  say(
    `      ${viaWorkflow.ok ? summarise((await viaWorkflow.json()) as Parameters<typeof summarise>[0]) : `${viaWorkflow.status} ${await viaWorkflow.text()}`}`,
  );
  const scored = await fetch(`${base}/events/bda/${WORKFLOW}/${WORKFLOW_SERVICE}/score`, {
    method: 'POST',
    headers: { authorization: `Apikey ${bdaKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 120.5, country: 'FR' }),
  });
  if (!scored.ok) failures++;
  say(
    `  the workflow service ${WORKFLOW}/${WORKFLOW_SERVICE}, with the bda key: ${scored.status} ${await scored.text()}`,
  );
  const listed = await fetch(`${base}/events/platform/api/v1/datasets`, { headers: auth });
  if (!listed.ok) failures++;
  say(`  the platform resource datasets, with the platform key: ${listed.status} ${await listed.text()}`);
  const refused = await fetch(`${base}/v2/models/model-iris/infer`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'features', datatype: 'FP32', shape: [2, 4], data: [1, 2, 3, 4, 5, 6] }],
    }),
  });
  say(`  a wrong shape: ${refused.status} ${await refused.text()}`);
  if (failures > 0)
    throw new Error(`${failures} inference(s) failed; see ${path.relative(ROOT, STATE)}/tollgate-dev.log`);

  if (process.env.DEMO_EXIT_AFTER_RUN === '1') return;
  say('\nRunning. Press Ctrl-C to stop everything the demo started.');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    dev.once('exit', resolve);
  });
}

try {
  await main();
} catch (err) {
  process.exitCode = 1;
  process.stderr.write(`\nmake demo failed: ${(err as Error).message}\n`);
} finally {
  step('stopping everything the demo started');
  await stopAll();
}
