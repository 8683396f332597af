import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startMlserver, venv } from '../../harness/index.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

interface Expected {
  rows: number[][];
  predictions: number[];
}
interface InferResponse {
  model_name: string;
  outputs: { name: string; datatype: string; shape: number[]; data: number[] }[];
}

describe('harness: mlserver', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-mlserver-smoke-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves a scikit-learn model trained in the test over V2', async () => {
    await run(venv().python, [join(here, 'fixtures', 'train_iris.py'), dir, 'iris']);
    const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as Expected;

    const ml = await startMlserver(dir);
    try {
      const ready = await fetch(`${ml.url}/v2/models/iris/ready`);
      expect(ready.status).toBe(200);

      const res = await fetch(`${ml.url}/v2/models/iris/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          inputs: [
            {
              name: 'input-0',
              datatype: 'FP64',
              shape: [expected.rows.length, 4],
              data: expected.rows.flat(),
            },
          ],
        }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as InferResponse;
      expect(body.model_name).toBe('iris');
      expect(body.outputs[0]?.data).toEqual(expected.predictions);
    } finally {
      await ml.stop();
    }
  });
});
