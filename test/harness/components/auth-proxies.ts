// The proxies a platform team already runs, in front of Tollgate's decision (forward-auth): Debian's
// nginx (auth_request) and Traefik built from its Go module (ForwardAuth, file provider), on
// loopback, each with the configuration a test gives it. `{{port}}` and `{{dir}}` in it are where
// the proxy listens and its own directory in the run (nginx's temp paths, its pid file).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../common/net/free-port.js';
import { binDir } from '../paths.js';
import type { ProcessRegistry } from '../processes.js';
import type { ProxyInfo } from '../types.js';
import { waitUntil } from '../wait.js';

const NGINX = '/usr/sbin/nginx';

async function listening(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await res.body?.cancel();
  return res.status === 200;
}

export async function startNginx(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
  conf: string,
): Promise<ProxyInfo> {
  const dir = join(runDir, `nginx-${tag}`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const ping = `location = /_ping { access_log off; return 200 "ok"; }`;
  const text = conf.replaceAll('{{port}}', String(port)).replaceAll('{{dir}}', dir).replace('{{ping}}', ping);
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, text);
  const proc = reg.spawn(`nginx-${tag}`, NGINX, ['-p', dir, '-c', file, '-e', join(dir, 'error.log')], {
    stopTimeoutMs: 5000,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(`nginx ${tag}`, () => listening(`${url}/_ping`), { timeoutMs: 15_000, proc });
  return { url, log: join(dir, 'error.log') };
}

export async function startTraefik(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
  dynamic: string,
): Promise<ProxyInfo> {
  const dir = join(runDir, `traefik-${tag}`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const file = join(dir, 'dynamic.yaml');
  writeFileSync(file, dynamic.replaceAll('{{port}}', String(port)).replaceAll('{{dir}}', dir));
  const proc = reg.spawn(
    `traefik-${tag}`,
    join(binDir, 'traefik'),
    [
      `--entryPoints.web.address=127.0.0.1:${port}`,
      `--providers.file.filename=${file}`,
      '--ping=true',
      '--ping.entryPoint=web',
      '--global.checkNewVersion=false',
      '--global.sendAnonymousUsage=false',
      '--log.level=INFO',
    ],
    { stopTimeoutMs: 5000 },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(`traefik ${tag}`, () => listening(`${url}/ping`), { timeoutMs: 20_000, proc });
  return { url, log: proc.logFile };
}
