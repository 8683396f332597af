import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRegistry } from './test/harness/processes.js';
import { startCluster } from './test/harness/components/cluster.js';
const runDir = mkdtempSync(join(tmpdir(), 'tollgate-try-'));
const reg = new ProcessRegistry(runDir);
console.log('runDir', runDir);
const t = Date.now();
try {
  const c = await startCluster(reg, runDir);
  console.log(JSON.stringify(c, null, 1), Date.now() - t);
} catch (e) {
  console.error('FAILED', e);
}
process.on('SIGTERM', async () => { await reg.stopAll(); process.exit(0); });
setInterval(() => {}, 1000);
