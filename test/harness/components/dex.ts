// Dex (built by install.sh from its Go module at a pinned release): a real OpenID Connect provider
// for the panel's sign-in tests, with in-memory storage, static users and one public client.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../../common/net/free-port.js';
import { bins } from '../paths.js';
import type { ProcessRegistry } from '../processes.js';
import type { DexInfo, DexOptions } from '../types.js';
import { httpOk, waitUntil } from '../wait.js';

export const DEX_CLIENT_ID = 'tollgate-panel';
// Dex's own example hash of "password" (bcrypt): its local users need a bcrypt hash, and the test
// users' password is no secret.
const PASSWORD = 'password';
const PASSWORD_HASH = '$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W';

const USERS = [
  { username: 'alice', email: 'alice@example.com', groups: ['tollgate-admins', 'staff'], userID: 'a1' },
  { username: 'bob', email: 'bob@example.com', groups: ['staff'], userID: 'b2' },
];

export async function startDex(
  reg: ProcessRegistry,
  runDir: string,
  tag: string,
  options: DexOptions,
): Promise<DexInfo> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}/dex`;
  const config = {
    issuer,
    storage: { type: 'memory' },
    web: { http: `127.0.0.1:${port}`, allowedOrigins: options.allowedOrigins },
    logger: { level: 'info', format: 'json' },
    expiry: { idTokens: options.tokenTtl ?? '10m', authRequests: '10m' },
    // The consent page is shown, so a test can deny it.
    oauth2: { responseTypes: ['code'], skipApprovalScreen: false },
    staticClients: [
      { id: DEX_CLIENT_ID, name: 'Tollgate panel', public: true, redirectURIs: options.redirectUris },
    ],
    enablePasswordDB: true,
    staticPasswords: USERS.map((u) => ({
      email: u.email,
      username: u.username,
      preferredUsername: u.username,
      hash: PASSWORD_HASH,
      userID: u.userID,
      groups: u.groups,
    })),
  };
  const file = join(runDir, `dex-${tag}.json`);
  // JSON is YAML: Dex reads it as its config file.
  writeFileSync(file, JSON.stringify(config, null, 2));
  const proc = reg.spawn(`dex-${tag}`, bins.dex, ['serve', file], { stopTimeoutMs: 5000 });
  await waitUntil(`dex ${tag}`, () => httpOk(`${issuer}/.well-known/openid-configuration`), {
    timeoutMs: 20_000,
    proc,
  });
  return {
    issuer,
    clientId: DEX_CLIENT_ID,
    users: USERS.map((u) => ({ username: u.username, email: u.email, password: PASSWORD, groups: u.groups })),
  };
}
