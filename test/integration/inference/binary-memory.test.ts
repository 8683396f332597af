import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { modelManifest } from '../../builders/resources.js';
import { redis } from '../../harness/index.js';
import { memoryMiB } from '../../harness/process-memory.js';
import { startDev, until, type Dev } from './dev-process.js';
import { trainExamples } from './stack.js';

/** A body in the binary tensor extension's layout: the JSON header, then the raw tensor. */
function binaryBody(
  input: Record<string, unknown>,
  bytes: Buffer,
): { body: Buffer; headers: Record<string, string> } {
  const header = Buffer.from(
    JSON.stringify({ inputs: [{ ...input, parameters: { binary_data_size: bytes.length } }] }),
  );
  return {
    body: Buffer.concat([header, bytes]),
    headers: {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(header.length),
    },
  };
}

/**
 * The binary tensor extension on a real `tollgate dev` process (the built CLI, one process) with
 * MLServer serving iris: bodies that decode to many times their size are refused on their header
 * or bounded while translated, so concurrent large bodies leave the process's peak memory near
 * where it was (an outside review saw four 8 MB BOOL bodies take it to 918 MiB).
 */
describe('binary tensors are checked before they are decoded, and translated within a bound', () => {
  let dev: Dev | undefined;
  let work: string;
  let state: string;
  let key: string;

  beforeAll(async () => {
    const r = await redis();
    work = await trainExamples(['iris']);
    state = await mkdtemp(path.join(tmpdir(), 'tollgate-binary-'));
    await mkdir(path.join(state, 'models'));
    await writeFile(
      path.join(state, 'models', 'model-iris.yaml'),
      modelManifest('model-iris', { storageUri: `file://${path.join(work, 'model-iris')}` }),
    );
    dev = await startDev(state, r.url, { built: true });
    key = await dev.key(['models:inference']);
  }, 300_000);
  afterAll(async () => {
    await dev?.stop();
    for (const dir of [state, work]) if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const infer = (body: Buffer, headers: Record<string, string>) =>
    fetch(`${dev?.base ?? ''}/v2/models/model-iris/infer`, {
      method: 'POST',
      headers: { authorization: `Apikey ${key}`, ...headers },
      body,
    });

  test('concurrent 8 MB bodies: refused on their header or answered, and the peak memory stays put', async () => {
    const rows = floatsBody(2);
    await until(
      'model-iris answering',
      async () => ((await infer(rows.body, rows.headers)).status === 200 ? true : undefined),
      120_000,
    );
    const pid = dev?.pid ?? 0;
    // Reset the peak (VmHWM) to now: what follows is measured from here.
    await writeFile(`/proc/${pid}/clear_refs`, '5');
    const before = memoryMiB(pid);

    const EIGHT_MB = 8 * 1024 * 1024;
    // A BOOL tensor for iris's FP32 input: 8 M values that once became ~50 MB of JSON each.
    const bools = binaryBody(
      { name: 'features', datatype: 'BOOL', shape: [EIGHT_MB] },
      Buffer.alloc(EIGHT_MB, 1),
    );
    // The right datatype, a shape that does not fit the bytes: refused before any value is read.
    const short = binaryBody({ name: 'features', datatype: 'FP32', shape: [4, 4] }, Buffer.alloc(EIGHT_MB));
    const answers = await Promise.all(
      [bools, bools, bools, bools, short, short].map(async (b) => {
        const res = await infer(b.body, b.headers);
        return `${res.status} ${((await res.json()) as { code?: string }).code ?? ''}`;
      }),
    );
    // Each is refused on what it holds; past the owner's share of the replica's memory (four
    // body limits, held calls included) one may be refused for that instead, before it is read.
    const expected = [...Array(4).fill('400 datatype_mismatch'), ...Array(2).fill('400 shape_data_mismatch')];
    answers.forEach((a, i) => expect([expected[i], '429 rate_limited']).toContain(a));
    expect(answers.filter((a) => a.startsWith('400')).length).toBeGreaterThanOrEqual(4);
    // Four valid 2 MB FP32 bodies (131,072 rows each): translated once and answered.
    const valid = floatsBody(131_072);
    const statuses = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const res = await infer(valid.body, valid.headers);
        // A failure says what it was: its code and message, not only its status.
        return res.status === 200 ? (await res.body?.cancel(), '200') : `${res.status} ${await res.text()}`;
      }),
    );
    expect(statuses).toEqual(['200', '200', '200', '200']);

    const after = memoryMiB(pid);
    const grew = after.peak - before.rss;
    process.stderr.write(
      `binary bodies: RSS before ${before.rss.toFixed(0)} MiB, peak after ${after.peak.toFixed(0)} MiB (+${grew.toFixed(0)} MiB over 6 × 8 MB refused and 4 × 2 MB answered)\n`,
    );
    // The bodies themselves (48 MB read, 8 MB answered), their JSON (bounded at 4× the limit) and
    // a lazy collector: 140 to 210 MiB measured. Decoded before the checks, the four BOOL bodies
    // alone took the process from ~170 to 918 MiB.
    expect(grew).toBeLessThan(400);
  }, 300_000);
});

/** `rows` iris rows as a binary FP32 body. */
function floatsBody(rows: number): { body: Buffer; headers: Record<string, string> } {
  const values = new Float32Array(rows * 4);
  for (let i = 0; i < values.length; i++) values[i] = [5.1, 3.5, 1.4, 0.2][i % 4] as number;
  return binaryBody({ name: 'features', datatype: 'FP32', shape: [rows, 4] }, Buffer.from(values.buffer));
}
