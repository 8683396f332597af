// Keys brought along from another gateway, by their SHA-256: through the management API of a real
// `tollgate dev` (its gateway answering the imported keys at once, listing, rolling and revoking
// them as any other), and as ApiKey manifests from `tollgate key import`, applied with kubectl to
// the harness's API server with the CRD from crds/. No plaintext key is ever sent or stored.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { freePort, redis } from '../../harness/index.js';
import { startUpstream, type Upstream } from '../gateway/support.js';
import { kubeWithApiKeys, removeTempDirs, tempDir } from './fixtures.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'tollgate.js');

let stateDir: string;
let upstream: Upstream;
let dev: ChildProcess | undefined;
let devLog = '';
let devUrl: string;
let admin: string;
let alice: string;

interface Json {
  status: number;
  body: Record<string, unknown>;
}

async function api(method: string, path: string, token: string, body?: unknown, raw?: string): Promise<Json> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${devUrl}/api/v1${path}`, {
    method,
    headers,
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** A GET of the datasets resource with `key`: the status and the error code. */
async function use(key: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`${devUrl}/events/platform/api/v1/datasets`, {
    headers: { authorization: `Apikey ${key}` },
  });
  const body = (await res.json()) as { code?: string };
  return res.ok ? { status: res.status } : { status: res.status, code: body.code };
}

async function token(user: string, group?: string): Promise<string> {
  const groups = group === undefined ? [] : ['--group', group];
  const { stdout } = await run(
    process.execPath,
    [BIN, 'token', '--user', user, '--state-dir', stateDir, ...groups],
    {
      env: { ...process.env, NODE_OPTIONS: '' },
    },
  );
  return stdout.trim();
}

/** A key of another gateway's format, and the row that imports it. */
function foreign(extra: Record<string, unknown> = {}): { key: string; row: Record<string, unknown> } {
  const key = `sk_live_${randomBytes(20).toString('base64url')}`;
  return {
    key,
    row: {
      hash: hashKey(key),
      start: key.slice(0, 8),
      module: 'platform',
      roles: ['viewer'],
      owner: 'alice@example.com',
      name: 'from the old gateway',
      ...extra,
    },
  };
}

beforeAll(async () => {
  stateDir = await tempDir('tollgate-import-');
  const redisUrl = (await redis('key-import')).url;
  upstream = await startUpstream();
  const port = await freePort();
  devUrl = `http://127.0.0.1:${port}`;
  dev = spawn(
    process.execPath,
    [BIN, 'dev', '--port', String(port), '--state-dir', stateDir, '--redis-url', redisUrl],
    {
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        TOLLGATE_UPSTREAMS: `datasets=${upstream.url}`,
        TOLLGATE_ADMIN_GROUPS: 'platform-ops',
        TOLLGATE_MAX_ROLL_GRACE_SECONDS: '600',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const keep = (c: Buffer): void => void (devLog = (devLog + c.toString()).slice(-20_000));
  dev.stdout?.on('data', keep);
  dev.stderr?.on('data', keep);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (dev.exitCode !== null) throw new Error(`tollgate dev exited at start:\n${devLog}`);
    const up = await fetch(`${devUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`tollgate dev did not start in 30 s:\n${devLog}`);
    await sleep(100);
  }
  admin = await token('ops@example.com', 'platform-ops');
  alice = await token('alice@example.com');
}, 120_000);

afterAll(async () => {
  if (dev !== undefined && dev.exitCode === null) {
    const exited = new Promise((r) => dev?.once('exit', r));
    dev.kill('SIGTERM');
    await exited;
  }
  await upstream?.close();
  await removeTempDirs();
});

describe('importing keys through the management API', () => {
  it('is for administrators only, and reads no body of anyone else', async () => {
    const { row } = foreign();
    const r = await api('POST', '/admin/apikeys/import', alice, { keys: [row] });
    expect(r.status).toBe(403);
    expect(r.body['code']).toBe('admin_required');
    const noJson = await api('POST', '/admin/apikeys/import', admin, undefined, undefined);
    expect(noJson.status).toBe(415);
  });

  it.each([
    ['a hash that is no SHA-256', { hash: 'abc' }, 'invalid_field', 'hash'],
    ['the whole key as its start', { start: 'sk_live_0123456789abcdef' }, 'invalid_field', 'start'],
    ['a role the platform does not have', { roles: ['superuser'] }, 'unknown_role', 'roles'],
    [
      'a workflow its owner does not own',
      { module: 'bda', roles: ['not-theirs'] },
      'unknown_workflow',
      'roles',
    ],
    ['an expiry in the past', { expiresAt: '2020-01-01T00:00:00Z' }, 'expiry_in_past', 'expiresAt'],
    ['no owner', { owner: '' }, 'invalid_field', 'owner'],
    ['a field keys do not have', { plaintext: 'sk_live_x' }, 'unknown_field', 'plaintext'],
  ])(
    'refuses a call with %s, naming the row and the field, and imports none of its keys',
    async (_what, bad, code, field) => {
      const good = foreign();
      const wrong = foreign(bad);
      const r = await api('POST', '/admin/apikeys/import', admin, { keys: [good.row, wrong.row] });
      expect(r.status).toBe(400);
      expect(r.body['code']).toBe(code);
      expect(String(r.body['field'])).toContain('keys.');
      expect(String(r.body['field'])).toContain(field);
      expect(String(r.body['error'])).toMatch(/keys\[1\]|keys\.1\./);
      // The good row before it was not imported either.
      expect((await use(good.key)).code).toBe('malformed_api_key');
    },
  );

  it('refuses the same key twice in one call, and an empty or oversized call', async () => {
    const one = foreign();
    const twice = await api('POST', '/admin/apikeys/import', admin, { keys: [one.row, one.row] });
    expect([twice.status, twice.body['code']]).toEqual([400, 'invalid_field']);
    expect(String(twice.body['error'])).toContain('keys[0]');
    const empty = await api('POST', '/admin/apikeys/import', admin, { keys: [] });
    expect([empty.status, empty.body['code']]).toEqual([400, 'invalid_field']);
    const many = await api('POST', '/admin/apikeys/import', admin, {
      keys: Array.from({ length: 1001 }, () => foreign().row),
    });
    expect([many.status, many.body['code']]).toEqual([400, 'invalid_field']);
    expect(String(many.body['error'])).toContain('1000');
  });

  it("imports keys of another format and of Tollgate's own: each works at once, is listed, and is kept only as its hash", async () => {
    const old = foreign({ rateLimit: { requests: 2, windowSeconds: 60 } });
    const own = generateKey('platform');
    const ownRow = {
      ...foreign().row,
      hash: hashKey(own),
      start: own.slice(0, 8),
      name: 'from another Tollgate',
    };
    const r = await api('POST', '/admin/apikeys/import', admin, { keys: [old.row, ownRow] });
    expect(r.status).toBe(200);
    const imported = r.body['imported'] as Array<Record<string, unknown>>;
    expect(imported.map((k) => [k['start'], k['imported'], k['module']])).toEqual([
      ['sk_live_', true, 'platform'],
      [own.slice(0, 8), true, 'platform'],
    ]);
    expect(await use(old.key)).toEqual({ status: 200 });
    expect(await use(own)).toEqual({ status: 200 });
    const seen = upstream.seen.at(-1);
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers['x-tollgate-key-id']).toBe(imported[1]?.['id']);
    // Its limit holds as any key's: 2 a minute.
    expect((await use(old.key)).status).toBe(200);
    expect(await use(old.key)).toMatchObject({ status: 429, code: 'rate_limited' });

    const listed = await api('GET', '/apikeys?search=old%20gateway', alice);
    const items = listed.body['items'] as Array<Record<string, unknown>>;
    expect(items.map((k) => k['id'])).toContain(imported[0]?.['id']);
    expect(items.find((k) => k['id'] === imported[0]?.['id'])?.['imported']).toBe(true);

    // Sent again (as after a call that failed halfway): nothing new, nothing changed.
    const again = await api('POST', '/admin/apikeys/import', admin, { keys: [old.row, ownRow] });
    expect(again.status).toBe(200);
    expect(again.body['imported']).toEqual([]);
    expect(again.body['unchanged']).toEqual([
      { index: 0, id: imported[0]?.['id'] },
      { index: 1, id: imported[1]?.['id'] },
    ]);
    // The same hash for another owner is refused, naming the key it is already.
    const taken = await api('POST', '/admin/apikeys/import', admin, {
      keys: [{ ...old.row, owner: 'bob@example.com' }],
    });
    expect([taken.status, taken.body['code'], taken.body['field']]).toEqual([409, 'key_exists', 'keys.hash']);

    // Nothing of the key is stored but its hash: not in the state directory's files.
    const files = await readdir(stateDir, { recursive: true });
    for (const file of files) {
      const text = await readFile(join(stateDir, file)).then(
        (b) => b.toString('latin1'),
        () => '',
      );
      expect(text.includes(old.key)).toBe(false);
    }
  });

  it('rolls an imported key to a Tollgate key, and revokes one at once', async () => {
    const old = foreign();
    const r = await api('POST', '/admin/apikeys/import', admin, { keys: [old.row] });
    const id = (r.body['imported'] as Array<Record<string, unknown>>)[0]?.['id'] as string;
    const rolled = await api('POST', `/apikeys/${id}/roll`, alice, { gracePeriodSeconds: 60 });
    expect(rolled.status).toBe(201);
    const fresh = rolled.body['key'] as string;
    expect(fresh).toMatch(/^tgp_/);
    expect(rolled.body['imported']).toBeUndefined();
    expect(await use(fresh)).toEqual({ status: 200 });
    // The old key works through its grace period.
    expect(await use(old.key)).toEqual({ status: 200 });

    const other = foreign();
    const second = await api('POST', '/admin/apikeys/import', admin, { keys: [other.row] });
    const otherId = (second.body['imported'] as Array<Record<string, unknown>>)[0]?.['id'] as string;
    expect(await use(other.key)).toEqual({ status: 200 });
    expect((await api('DELETE', `/apikeys/${otherId}`, alice)).status).toBe(204);
    // Of another format, and no longer imported: refused as any such value is.
    expect(await use(other.key)).toEqual({ status: 401, code: 'malformed_api_key' });
  });

  it('refuses the keys of an owner who was offboarded', async () => {
    const off = await api('POST', '/admin/offboard', admin, { owner: 'mallory@example.com' });
    expect(off.status).toBe(200);
    const r = await api('POST', '/admin/apikeys/import', admin, {
      keys: [foreign({ owner: 'mallory@example.com' }).row],
    });
    expect([r.status, r.body['code'], r.body['field']]).toEqual([409, 'owner_offboarded', 'keys.owner']);
    expect(String(r.body['error'])).toContain('mallory@example.com');
  });

  it("refuses a key of another format that no one imported as malformed, and a lookalike of Tollgate's format without a lookup", async () => {
    expect(await use(foreign().key)).toEqual({ status: 401, code: 'malformed_api_key' });
    expect(await use('tgp_sk_live_0123456789abcdefghij')).toEqual({ status: 401, code: 'malformed_api_key' });
  });
});

describe('importing keys as manifests (tollgate key import, kubectl apply)', () => {
  it('writes ApiKeys the API server takes, named by the hash so applying twice changes nothing', async () => {
    const { kubectl, kubeconfig } = await kubeWithApiKeys();
    const ns = `import-${randomBytes(4).toString('hex')}`;
    await run(kubectl, ['--kubeconfig', kubeconfig, 'create', 'namespace', ns]);
    const a = foreign();
    const b = foreign({ module: 'platform', roles: ['viewer', 'editor'], name: 'two roles' });
    const file = join(stateDir, 'keys.jsonl');
    await writeFile(file, `${JSON.stringify(a.row)}\n\n${JSON.stringify(b.row)}\n`);
    const made = await run(process.execPath, [BIN, 'key', 'import', '--file', file, '--namespace', ns], {
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(made.stdout).not.toContain(a.key);
    const docs = parseAllDocuments(made.stdout).map(
      (d) => d.toJS() as { metadata: { name: string }; spec: Record<string, unknown> },
    );
    expect(docs.map((d) => [d.spec['start'], d.spec['imported'], d.spec['hash']])).toEqual([
      ['sk_live_', true, a.row['hash']],
      ['sk_live_', true, b.row['hash']],
    ]);
    const manifests = join(stateDir, 'keys.yaml');
    await writeFile(manifests, made.stdout);
    await run(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', manifests]);
    const again = await run(process.execPath, [BIN, 'key', 'import', '--file', file, '--namespace', ns], {
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(again.stdout).toBe(made.stdout);
    const listed = await run(kubectl, ['--kubeconfig', kubeconfig, '-n', ns, 'get', 'apikeys', '-o', 'name']);
    expect(listed.stdout.trim().split('\n').sort()).toEqual(
      docs.map((d) => `apikey.tollgate.dev/${d.metadata.name}`).sort(),
    );

    // A key not marked imported must start with Tollgate's prefix: the CRD refuses it.
    const forged = made.stdout
      .split('---\n')[0]
      ?.replace(/\n\s*imported: true/, '')
      .replace(/name: key-[0-9a-f]{20}/, 'name: key-00000000000000000001');
    await writeFile(manifests, forged ?? '');
    const refused = await run(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', manifests]).then(
      () => '',
      (err: { stderr?: string }) => err.stderr ?? 'refused',
    );
    expect(refused).toContain("start must be the module's key prefix");
    await run(kubectl, ['--kubeconfig', kubeconfig, 'delete', 'namespace', ns, '--wait=false']);
  });

  it.each([
    ['not JSON', 'hash=abc', 'line 1: not JSON'],
    ['a bad hash', JSON.stringify({ ...foreign().row, hash: 'xyz' }), 'line 1: hash:'],
    [
      'the same key twice',
      [foreign().row].flatMap((r) => [JSON.stringify(r), JSON.stringify(r)]).join('\n'),
      'line 2: the same hash as line 1',
    ],
    ['nothing', '\n\n', 'holds no keys'],
  ])('refuses a file with %s, naming the line, and writes nothing', async (_what, text, says) => {
    const file = join(stateDir, `bad-${randomBytes(3).toString('hex')}.jsonl`);
    await writeFile(file, text);
    const failed = await run(process.execPath, [BIN, 'key', 'import', '--file', file], {
      env: { ...process.env, NODE_OPTIONS: '' },
    }).then(
      () => ({ code: 0, stdout: 'accepted', stderr: '' }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({
        code: err.code ?? -1,
        stdout: err.stdout ?? '',
        stderr: err.stderr ?? '',
      }),
    );
    expect(failed.code).toBe(2);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toContain(says);
    await rm(file);
  });
});
