import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { createLogger } from '../../../common/logger.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagement } from '../../../gateway/api/management.js';
import { loadGatewayConfig, type GatewayConfigInput } from '../../../gateway/config.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { type SharedServices } from '../../../gateway/services.js';
import { noModels } from '../../../gateway/v2/model-directory.js';
import { markIndexBuilt } from '../workflow-route.js';
import { dex, freePort, launchChromium, redis, type DexInfo } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

/**
 * Signing in to the panel through a real OpenID Connect provider (Dex, built from its Go module),
 * in Chromium: the authorization code flow with PKCE run by the panel, tokens verified by the
 * gateway against Dex's JWKS, administrators from Dex's groups claim. Three gateways: one as an
 * operator would configure it, one whose audience is wrong, and one beside a Dex whose tokens
 * live 12 seconds (the expired-session case).
 */
const log = createLogger('sign-in-test', 'silent');
const SHORT_TTL_SECONDS = 12;

let stateDir: string;
let redisClient: Redis;
let redisUrl: string;
let browser: Browser;
const gateways: GatewayServer[] = [];
let mainDex: DexInfo;
let shortDex: DexInfo;
let main: string;
let wrongAudience: string;
let shortLived: string;

async function startGateway(port: number, oidc: GatewayConfigInput['oidc']): Promise<string> {
  const base = `http://127.0.0.1:${port}`;
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      redisUrl,
      port,
      host: '127.0.0.1',
      upstreams: { datasets: 'http://127.0.0.1:9' },
      auditUri: pathToFileURL(join(stateDir, 'audit')).href,
      auditFlushMs: 100,
      oidc,
      adminGroups: ['tollgate-admins'],
    },
  });
  if (config.oidc === undefined) throw new Error('the test gateway needs OIDC settings');
  const identity = { oidc: config.oidc };
  const management = ({ roles, audit, trust }: SharedServices) =>
    createManagement({
      trust,
      redis: redisClient,
      workflows: new WorkflowRoutes(redisClient, trust.verifier),
      log,
      roles,
      audit,
      maxRollGraceSeconds: config.maxRollGraceSeconds,
      keys: { stateDir },
      identity,
      admin: { groupsClaim: config.groupsClaim, adminGroups: config.adminGroups },
    });
  const gateway = await buildCentralGateway(config, log, { models: noModels, management });
  await gateway.listen(port, '127.0.0.1');
  gateways.push(gateway);
  return base;
}

beforeAll(async () => {
  const r = await redis('sign-in');
  redisUrl = r.url;
  redisClient = new Redis(r.url);
  // No operator here: the test stands in for it, and says the key index is complete.
  await markIndexBuilt(redisClient);
  stateDir = await mkdtemp(join(tmpdir(), 'tollgate-sign-in-'));
  const [mainPort, wrongPort, shortPort] = [await freePort(), await freePort(), await freePort()];
  const origin = (port: number) => `http://127.0.0.1:${port}`;
  mainDex = await dex('panel', {
    redirectUris: [`${origin(mainPort)}/panel/`, `${origin(wrongPort)}/panel/`],
    allowedOrigins: [origin(mainPort), origin(wrongPort)],
  });
  shortDex = await dex('panel-short', {
    redirectUris: [`${origin(shortPort)}/panel/`],
    allowedOrigins: [origin(shortPort)],
    tokenTtl: `${SHORT_TTL_SECONDS}s`,
  });
  const client = { clientId: mainDex.clientId, scopes: 'openid profile email groups' };
  // Clocks that agree (one machine): a token signed a second after an offboarding counts as after.
  main = await startGateway(mainPort, {
    issuer: mainDex.issuer,
    audience: mainDex.clientId,
    clockToleranceSeconds: 0,
    ...client,
  });
  // What an operator gets wrong most often: the audience the gateway expects is not the one the
  // provider puts in its tokens.
  wrongAudience = await startGateway(wrongPort, {
    issuer: mainDex.issuer,
    audience: 'tollgate-api',
    ...client,
  });
  shortLived = await startGateway(shortPort, {
    issuer: shortDex.issuer,
    audience: shortDex.clientId,
    clockToleranceSeconds: 0,
    ...client,
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  for (const gateway of gateways) await gateway.shutdown();
  redisClient?.disconnect();
  await rm(stateDir, { recursive: true, force: true });
});

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  return context.newPage();
}

const user = (info: DexInfo, name: string) => {
  const found = info.users.find((u) => u.username === name);
  if (found === undefined) throw new Error(`no Dex user ${name}`);
  return found;
};

/** At Dex: the password form, then the consent page. */
async function signInAtDex(page: Page, info: DexInfo, name: string, consent: 'grant' | 'deny' = 'grant') {
  const u = user(info, name);
  await page.locator('#login').waitFor();
  expect(page.url().startsWith(info.issuer)).toBe(true);
  await page.locator('#login').fill(u.email);
  await page.locator('#password').fill(u.password);
  await page.locator('#submit-login').click();
  await page.getByRole('button', { name: consent === 'grant' ? 'Grant Access' : 'Cancel' }).click();
}

/** From the panel's sign-in page, through Dex, back to the panel's keys page. */
async function signIn(page: Page, base: string, info: DexInfo, name: string): Promise<void> {
  await page.goto(`${base}/panel/`);
  await page.getByRole('button', { name: 'Sign in with your organisation' }).click();
  await signInAtDex(page, info, name);
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
}

const tokenOf = (page: Page): Promise<string | null> =>
  page.evaluate<string | null>("sessionStorage.getItem('tollgate.token')");

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
}

async function createKeyInPanel(page: Page, name: string, roles: string[] = ['viewer']): Promise<string> {
  await page.getByRole('button', { name: 'Create key' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'Create an API key' });
  await dialog.locator('#role-platform input').first().waitFor({ state: 'attached' });
  await dialog.getByText('Platform REST resources').click();
  for (const role of roles) await dialog.locator(`#role-platform input[value="${role}"]`).check();
  await dialog.getByLabel('Name (optional)').fill(name);
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const reveal = page.getByRole('dialog', { name: 'Your new API key' });
  await reveal.waitFor();
  const key = await reveal.getByLabel('API key').inputValue();
  await reveal.getByRole('button', { name: 'I have stored it' }).click();
  await reveal.waitFor({ state: 'hidden' });
  return key;
}

const banner = (page: Page) => page.locator('#banner-text');

describe('panel sign-in through a real OpenID Connect provider (Dex)', () => {
  it('signs in with the code flow and PKCE, creates a key, and signs out', async () => {
    const page = await newPage();
    await page.goto(`${main}/panel/`);
    // Provider configured: "Sign in" first, the paste box folded away for scripts.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.locator('#token-sign-in').getAttribute('open')).toBeNull();

    const authorize = await startSignIn(page, mainDex);
    // The authorization request carries PKCE (S256), a state and a nonce; no secret.
    expect(Object.fromEntries(authorize.searchParams)).toEqual({
      client_id: mainDex.clientId,
      redirect_uri: `${main}/panel/`,
      response_type: 'code',
      scope: 'openid profile email groups',
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: 'S256',
      state: expect.stringMatching(/^[\w-]{43}$/),
      nonce: expect.stringMatching(/^[\w-]{43}$/),
    });
    await signInAtDex(page, mainDex, 'alice');
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await expect(page.locator('#whoami').textContent()).resolves.toBe('Signed in as alice (administrator)');

    // The code left the address bar and the history; the token is in no URL.
    const here = new URL(page.url());
    expect(here.search).toBe('');
    const token = await tokenOf(page);
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(page.url()).not.toContain(token ?? '-');
    expect(await page.evaluate<number>('history.length')).toBeGreaterThan(0);

    const key = await createKeyInPanel(page, 'made after signing in');
    expect(key).toMatch(/^tgp_/);
    // The gateway knows the user as Dex's subject, with the name from the token.
    const me = await api(main, token ?? '', 'GET', '/me');
    expect(me).toMatchObject({ status: 200, body: { name: 'alice', admin: true } });
    const mine = await api(main, token ?? '', 'GET', '/apikeys');
    expect((mine.body.items as Array<{ name?: string }>).map((k) => k.name)).toContain(
      'made after signing in',
    );

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    // Dex publishes no end-session endpoint: the panel says what that means.
    await expect(banner(page).textContent()).resolves.toContain('sign out there too');
    expect(await tokenOf(page)).toBeNull();
    // Signing in again asks for the password again.
    await page.getByRole('button', { name: 'Sign in with your organisation' }).click();
    await page.locator('#password').waitFor();
    await page.context().close();
  });

  it('takes no #token= sign-in link while a provider signs users in (login CSRF)', async () => {
    // The attacker's own valid token, put in a link for the victim.
    const attacker = await newPage();
    await signIn(attacker, main, mainDex, 'bob');
    const token = (await tokenOf(attacker)) ?? '';
    expect(token).not.toBe('');
    await attacker.context().close();
    const victim = await newPage();
    await victim.goto(`${main}/panel/#token=${token}`);
    await victim.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await tokenOf(victim)).toBeNull();
    // The link's token leaves the address bar all the same.
    expect(victim.url()).not.toContain(token);
    await victim.context().close();
  });

  it('lets an administrator revoke any key and offboard a user; others get neither', async () => {
    const bob = await newPage();
    await signIn(bob, main, mainDex, 'bob');
    await expect(bob.locator('#whoami').textContent()).resolves.toBe('Signed in as bob');
    // No administration for bob: the menu entry is hidden, #admin shows his own keys, the API says 403.
    expect(await bob.locator('#nav-admin').isHidden()).toBe(true);
    const bobToken = (await tokenOf(bob)) ?? '';
    const refused = await api(main, bobToken, 'GET', '/admin/apikeys');
    expect(refused).toMatchObject({ status: 403, body: { code: 'admin_required' } });
    const first = await createKeyInPanel(bob, 'bob first');
    await createKeyInPanel(bob, 'bob second');
    await bob.goto(`${main}/panel/#admin`);
    await bob.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(await bob.locator('#admin-page').isHidden()).toBe(true);

    const alice = await newPage();
    await signIn(alice, main, mainDex, 'alice');
    await alice.getByRole('link', { name: 'All keys' }).click();
    await alice.getByRole('heading', { name: 'All users’ keys' }).waitFor();
    await alice.locator('#admin-search').fill('bob first');
    const row = alice.locator('#admin-body tr', { hasText: 'bob first' });
    // The search runs on the server: only bob's matching key is left.
    await until(
      async () => (await alice.locator('#admin-body tr').count()) === 1,
      'the search to narrow the list',
    );
    await expect(row.textContent()).resolves.toContain('bob');

    const useFirst = () =>
      fetch(`${main}/events/platform/api/v1/datasets`, { headers: { authorization: `Apikey ${first}` } });
    // Accepted before (the upstream behind it is down: 502, past the key check).
    expect((await useFirst()).status).toBe(502);
    await row.getByRole('button', { name: /^Revoke key/ }).click();
    const confirm = alice.getByRole('dialog', { name: 'Revoke this key?' });
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await expect(banner(alice).textContent()).resolves.toMatch(/revoked/);
    // Revoked at once: the key is refused by the gateway.
    expect((await useFirst()).status).toBe(401);

    await alice.locator('#admin-search').fill('bob second');
    const second = alice.locator('#admin-body tr', { hasText: 'bob second' });
    await until(
      async () => (await alice.locator('#admin-body tr').count()) === 1,
      'the search to narrow the list',
    );
    await second.getByRole('button', { name: 'Offboard bob' }).click();
    const offboard = alice.getByRole('dialog', { name: 'Offboard bob?' });
    await offboard.getByRole('button', { name: 'Revoke all their keys' }).click();
    await offboard.waitFor({ state: 'hidden' });
    await expect(banner(alice).textContent()).resolves.toBe('bob was offboarded: 1 key revoked.');

    // Offboarded is locked out: the token bob still holds is refused.
    const locked = await api(main, bobToken, 'GET', '/apikeys');
    expect([locked.status, locked.body.code]).toEqual([401, 'token_revoked']);
    // Signed in again later (his access restored): his list is empty, and his audit log says who
    // revoked his keys.
    await new Promise((r) => setTimeout(r, 1_100));
    const again = await newPage();
    await signIn(again, main, mainDex, 'bob');
    const returning = (await tokenOf(again)) ?? '';
    await again.context().close();
    const left = await api(main, returning, 'GET', '/apikeys');
    expect(left.body.items).toEqual([]);
    const aliceSubject = ((await api(main, (await tokenOf(alice)) ?? '', 'GET', '/me')).body.subject ??
      '') as string;
    let events: Array<{ action: string; actor: string; detail?: { reason?: string } }> = [];
    for (let i = 0; i < 50 && events.filter((e) => e.action === 'key.deleted').length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      events = (await api(main, returning, 'GET', '/audit?action=key.deleted')).body.items as typeof events;
    }
    expect(events.map((e) => [e.actor, e.detail?.reason]).sort()).toEqual(
      [
        [aliceSubject, 'revoked by an administrator'],
        [aliceSubject, 'user offboarded'],
      ].sort(),
    );
    await alice.context().close();
    await bob.context().close();
  });

  it('ends a denied consent on a clear page, from Dex and from a provider that redirects back', async () => {
    const page = await newPage();
    await page.goto(`${main}/panel/`);
    await page.getByRole('button', { name: 'Sign in with your organisation' }).click();
    await signInAtDex(page, mainDex, 'alice', 'deny');
    // Dex keeps the browser and says so itself.
    await page.getByText('Approval rejected').waitFor();

    // Standard providers (Keycloak, Entra ID, Okta) send the browser back with error=access_denied.
    await page.goto(`${main}/panel/`);
    const state = (await startSignIn(page, mainDex)).searchParams.get('state') ?? '';
    await page.goto(
      `${main}/panel/?error=access_denied&error_description=${encodeURIComponent('The user denied access')}&state=${state}`,
    );
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect(banner(page).textContent()).resolves.toBe(
      'Sign-in was not completed: access was denied at the identity provider (access_denied: The user denied access). To use the panel, sign in again and allow access.',
    );
    expect(new URL(page.url()).search).toBe('');
    expect(await tokenOf(page)).toBeNull();

    // An answer replayed in another tab, with no sign-in started there, is refused plainly.
    const other = await newPage();
    await other.goto(`${main}/panel/?code=stolen&state=${state}`);
    await other.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect(banner(other).textContent()).resolves.toContain(
      'does not belong to a sign-in started in this tab',
    );
    await page.context().close();
    await other.context().close();
  });

  it('ends a token of the wrong audience on a clear page that says what to fix', async () => {
    const page = await newPage();
    await page.goto(`${wrongAudience}/panel/`);
    await page.getByRole('button', { name: 'Sign in with your organisation' }).click();
    await signInAtDex(page, mainDex, 'alice');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const text = (await banner(page).textContent()) ?? '';
    expect(text).toContain('this gateway does not accept its token');
    expect(text).toContain('claim aud');
    expect(text).toContain('oidc.audience');
    expect(await tokenOf(page)).toBeNull();
    await page.context().close();
  });

  it('sends an expired session back through sign-in, keeping the half-filled dialog', async () => {
    const page = await newPage();
    await signIn(page, shortLived, shortDex, 'alice');
    const expiresAt = expiryOf((await tokenOf(page)) ?? '');
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(SHORT_TTL_SECONDS * 1000);
    await page.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.locator('#role-platform input').first().waitFor({ state: 'attached' });
    await dialog.getByText('Platform REST resources').click();
    await dialog.locator('#role-platform input[value="datasets:viewer"]').check();
    await dialog.getByLabel('Name (optional)').fill('written before expiry');
    // Past the token's own expiry (the gateway allows no clock leeway here).
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt + 1_000 - Date.now())));

    await dialog.getByRole('button', { name: 'Create key' }).click();

    await signInAtDex(page, shortDex, 'alice');
    await dialog.waitFor();
    await expect(banner(page).textContent()).resolves.toContain('Your session had expired');
    // The draft comes back once the dialog has its roles again.
    await until(
      async () => (await dialog.getByLabel('Name (optional)').inputValue()) === 'written before expiry',
      'the draft to be restored',
    );
    expect(await dialog.locator('#role-platform input[value="datasets:viewer"]').isChecked()).toBe(true);
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const reveal = page.getByRole('dialog', { name: 'Your new API key' });
    await reveal.waitFor();
    await expect(reveal.getByLabel('API key').inputValue()).resolves.toMatch(/^tgp_/);
    await page.context().close();
  });
});

/** When a JWT expires (its `exp`), in ms. */
function expiryOf(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
    exp: number;
  };
  return payload.exp * 1000;
}

/** Polls `check` (from the test: the panel's CSP forbids Playwright's in-page polling). */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Clicks "Sign in" on the panel; resolves with the authorization request the browser sent to Dex. */
async function startSignIn(page: Page, info: DexInfo): Promise<URL> {
  const sent = page.waitForRequest((r) => r.url().startsWith(`${info.issuer}/auth?`));
  await page.getByRole('button', { name: 'Sign in with your organisation' }).click();
  const request = await sent;
  await page.locator('#login').waitFor();
  return new URL(request.url());
}
