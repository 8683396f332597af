import { noModels } from '../../../gateway/v2/model-directory.js';
import { putWorkflowRoute } from '../workflow-route.js';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { createLogger } from '../../../common/logger.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagement } from '../../../gateway/api/management.js';
import { LocalIssuer } from '../../../gateway/auth/local-issuer.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import type { GatewayServer } from '../../../gateway/server.js';
import { type SharedServices } from '../../../gateway/services.js';
import { freePort, launchChromium, redis } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE, readSealed } from '../signing.js';
import { buildCentralGateway } from '../../../gateway/central-gateway.js';

/**
 * The panel in a real Chromium, served by the real gateway with its management API (keys as
 * manifests, real Redis, OIDC tokens verified through the JWKS the gateway serves), and the keys it
 * creates used for real through the same gateway's hot path to an upstream on loopback.
 */
const log = createLogger('panel-test', 'silent');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let stateDir: string;
let redisClient: Redis;
let issuer: LocalIssuer;
let upstream: Server;
let upstreamHits: Array<{ url: string; authorization?: string }>;
let gateway: GatewayServer;
let gatewayBase: string;
let browser: Browser;

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

beforeAll(async () => {
  const r = await redis('panel');
  redisClient = new Redis(r.url);
  stateDir = await mkdtemp(join(tmpdir(), 'tollgate-panel-'));
  issuer = await LocalIssuer.open(stateDir);

  // An upstream for both the workflow service and the platform resource.
  upstreamHits = [];
  upstream = createServer((req, res) => {
    upstreamHits.push({ url: req.url ?? '', authorization: req.headers.authorization });
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ ok: true, url: req.url }));
  });
  const upstreamUrl = await listen(upstream);
  await putWorkflowRoute(redisClient, {
    workflow: 'wf-sales',
    service: 'api',
    url: upstreamUrl,
    owner: 'alice',
  });
  await putWorkflowRoute(redisClient, { workflow: 'wf-bob', service: 'api', url: upstreamUrl, owner: 'bob' });

  // The gateway as `tollgate dev` composes it: the panel, the management API (keys as manifests,
  // users from the local issuer, verified through the JWKS the gateway serves) and the hot path,
  // on one origin.
  const port = await freePort();
  gatewayBase = `http://127.0.0.1:${port}`;
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      redisUrl: r.url,
      port,
      host: '127.0.0.1',
      upstreams: { datasets: upstreamUrl },
      // The audit trail beside the manifests, as `tollgate dev` keeps it.
      auditUri: pathToFileURL(join(stateDir, 'audit')).href,
      usageFlushMs: 100,
    },
  });
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
      identity: { local: { stateDir, selfUrl: gatewayBase } },
      admin: { groupsClaim: 'groups', adminGroups: [] },
    });
  gateway = await buildCentralGateway(config, log, { models: noModels, management });
  await gateway.listen(port, '127.0.0.1');

  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await gateway?.shutdown();
  await new Promise((r) => upstream?.close(r));
  redisClient?.disconnect();
  await rm(stateDir, { recursive: true, force: true });
});

async function openPanel(user: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${gatewayBase}/panel/#token=${await issuer.mint(user)}`);
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
  return page;
}

const rows = (page: Page) => page.locator('#keys-body tr');

/** Fills the create dialog and saves; returns the key shown once. */
async function createKeyThroughDialog(
  page: Page,
  choice:
    | { module: 'bda'; workflow: string; name: string }
    | { module: 'platform'; roles: string[]; name: string; expires?: string },
): Promise<string> {
  await page.getByRole('button', { name: 'Create key' }).first().click();
  const dialog = page.getByRole('dialog', { name: 'Create an API key' });
  await dialog.waitFor();
  // Wait for the roles to arrive from GET /modules.
  await dialog.locator('#role-platform input').first().waitFor({ state: 'attached' });
  if (choice.module === 'bda') {
    await dialog.getByLabel('Workflow', { exact: true }).selectOption(choice.workflow);
  } else {
    await dialog.getByText('Platform REST resources').click();
    for (const role of choice.roles) await dialog.locator(`#role-platform input[value="${role}"]`).check();
    if (choice.expires) await dialog.getByLabel('Expires (optional)').fill(choice.expires);
  }
  await dialog.getByLabel('Name (optional)').fill(choice.name);
  await dialog.getByRole('button', { name: 'Create key' }).click();
  const reveal = page.getByRole('dialog', { name: 'Your new API key' });
  await reveal.waitFor();
  await reveal.getByText('It is shown only once').waitFor();
  return reveal.getByLabel('API key').inputValue();
}

async function closeReveal(page: Page): Promise<void> {
  const reveal = page.getByRole('dialog', { name: 'Your new API key' });
  await reveal.getByRole('button', { name: 'I have stored it' }).click();
  await reveal.waitFor({ state: 'hidden' });
  await forgotten(page);
}

/**
 * Waits for the reveal dialog's close event (queued after the dialog hides) to clear the key.
 * Polled from the test: waitForFunction's in-page polling evaluates its predicate with eval,
 * which the panel's Content-Security-Policy (rightly) forbids.
 */
async function forgotten(page: Page): Promise<void> {
  const deadline = Date.now() + 2000;
  while ((await page.evaluate<string>("document.getElementById('reveal-key').value")) !== '') {
    if (Date.now() > deadline) throw new Error('the shown key was not cleared within 2 s of closing');
    await new Promise((r) => setTimeout(r, 20));
  }
}

// The test's TypeScript has no DOM library: page-side code is passed as source text.
/** Every string the page holds: its markup, its form fields' values and its storage. */
const pageContents = (page: Page): Promise<string> =>
  page.evaluate<string>(`[
    document.documentElement.outerHTML,
    ...[...document.querySelectorAll('input, textarea')].map((e) => e.value),
    JSON.stringify({ ...sessionStorage }),
    JSON.stringify({ ...localStorage }),
  ].join('\\n')`);

/** The focused element: `<tag>#<id>`, `<tag>[<name>=<value>]`, or `<tag>:<text>`. */
const focused = (page: Page): Promise<string> =>
  page.evaluate<string>(
    `(() => {
      const e = document.activeElement;
      const tag = e.tagName.toLowerCase();
      if (e.id) return tag + '#' + e.id;
      if (e.name) return tag + '[' + e.name + '=' + e.value + ']';
      return tag + ':' + e.textContent.trim();
    })()`,
  );

async function callGateway(path: string, key: string): Promise<{ status: number; body: { code?: string } }> {
  const res = await fetch(`${gatewayBase}${path}`, { headers: { authorization: `Apikey ${key}` } });
  return { status: res.status, body: (await res.json()) as { code?: string } };
}

describe('management panel', () => {
  let alice: Page;
  let bdaKey: string;
  let platformKey: string;

  it('takes the token from the URL fragment, removes it from the address bar, and shows no keys yet', async () => {
    alice = await openPanel('alice');
    expect(new URL(alice.url()).hash).toBe('');
    await expect(alice.locator('#whoami').textContent()).resolves.toBe('Signed in as alice');
    await alice.getByText('No API keys yet').waitFor();
    await alice.screenshot({ path: '/tmp/panel-empty.png' });
  });

  it('shows a field error, and sends nothing, when no role is chosen', async () => {
    await alice.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = alice.getByRole('dialog', { name: 'Create an API key' });
    await dialog.locator('#role-bda option[value="wf-sales"]').waitFor({ state: 'attached' });
    // Only the caller's own workflows are offered.
    expect(await dialog.locator('#role-bda option').allTextContents()).toEqual([
      'Choose a workflow…',
      'wf-sales — services: api',
    ]);
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByText('Choose the workflow this key may call.').waitFor();
    expect(await dialog.getByLabel('Workflow', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await focused(alice)).toBe('select#role-bda');

    await dialog.getByText('Platform REST resources').click();
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.getByText('Choose at least one role.').waitFor();
    await alice.screenshot({ path: '/tmp/panel-create-error.png' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await redisClient.keys(redisKeys.apiKey('*'))).toEqual([]);
  });

  it("shows the API's own error next to the field it names (an expiry in the past)", async () => {
    await alice.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = alice.getByRole('dialog', { name: 'Create an API key' });
    await dialog.locator('#role-platform input[value="viewer"]').waitFor({ state: 'attached' });
    await dialog.getByText('Platform REST resources').click();
    await dialog.locator('#role-platform input[value="viewer"]').check();
    await dialog.getByLabel('Expires (optional)').fill('2020-01-31');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.locator('#expiry-error').getByText('expiresAt is in the past').waitFor();
    expect(await dialog.getByLabel('Expires (optional)').getAttribute('aria-invalid')).toBe('true');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await redisClient.keys(redisKeys.apiKey('*'))).toEqual([]);
  });

  it('creates a bda key, shows it once, and the key calls the workflow through the gateway', async () => {
    bdaKey = await createKeyThroughDialog(alice, {
      module: 'bda',
      workflow: 'wf-sales',
      name: 'sales export',
    });
    expect(bdaKey).toMatch(/^tgb_[0-9A-Za-z]{36}$/);
    await alice.screenshot({ path: '/tmp/panel-reveal.png' });
    // The copy button puts exactly the key on the clipboard.
    await alice.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gatewayBase });
    await alice.getByRole('button', { name: 'Copy' }).click();
    await alice.getByText('Copied to the clipboard.').waitFor();
    expect(await alice.evaluate<string>('navigator.clipboard.readText()')).toBe(bdaKey);
    // Only the hash is indexed, and it grants what the dialog chose.
    const grant = (await readSealed(redisClient, redisKeys.apiKey(sha256(bdaKey)))) as {
      owner: string;
      module: string;
      roles: string[];
      name: string;
    };
    expect(grant).toMatchObject({ owner: 'alice', module: 'bda', roles: ['wf-sales'], name: 'sales export' });
    await closeReveal(alice);
    expect(await pageContents(alice)).not.toContain(bdaKey);

    const call = await callGateway('/events/bda/wf-sales/api/orders?day=1', bdaKey);
    expect(call.status).toBe(200);
    expect(upstreamHits.at(-1)).toEqual({ url: '/orders?day=1', authorization: undefined });
    // The key is for wf-sales only.
    expect((await callGateway('/events/bda/wf-bob/api/orders', bdaKey)).status).toBe(403);
  });

  it('creates a platform key with several roles and an expiry; it calls a platform resource', async () => {
    platformKey = await createKeyThroughDialog(alice, {
      module: 'platform',
      roles: ['viewer', 'datasets:editor'],
      name: 'ci reader',
      expires: '2099-12-31',
    });
    expect(platformKey).toMatch(/^tgp_[0-9A-Za-z]{36}$/);
    await closeReveal(alice);
    const contents = await pageContents(alice);
    expect(contents).not.toContain(platformKey);
    expect(contents).not.toContain(bdaKey);

    const call = await callGateway('/events/platform/api/v1/datasets/d1', platformKey);
    expect(call.status).toBe(200);
    expect(upstreamHits.at(-1)?.url).toBe('/api/v1/datasets/d1');

    // The table lists both (newest first, but both were made in the same second) with what each
    // grants, and never the full key.
    await rows(alice).nth(1).waitFor();
    expect(await rows(alice).count()).toBe(2);
    const platformRow = await alice.locator('#keys-body tr', { hasText: 'ci reader' }).innerText();
    expect(platformRow).toContain(`${platformKey.slice(0, 8)}…`);
    expect(platformRow).toContain('platform');
    expect(platformRow).toContain('viewer');
    expect(platformRow).toContain('datasets:editor');
    expect(platformRow).toMatch(/Dec 31, 2099|31 Dec 2099/);
    const bdaRow = await alice.locator('#keys-body tr', { hasText: 'sales export' }).innerText();
    expect(bdaRow).toContain(`${bdaKey.slice(0, 8)}…`);
    expect(bdaRow).toContain('wf-sales');
    await alice.getByText('2 keys').waitFor();
    await alice.screenshot({ path: '/tmp/panel-list.png' });
  });

  it('searches on the server as the user types', async () => {
    const search = alice.getByRole('searchbox', { name: 'Search keys' });
    await search.fill('sales');
    await alice.getByText('1 key matching “sales”').waitFor();
    expect(await rows(alice).count()).toBe(1);
    expect(await rows(alice).nth(0).innerText()).toContain('sales export');

    await search.fill('datasets:ed');
    await alice.getByText('1 key matching “datasets:ed”').waitFor();
    expect(await rows(alice).nth(0).innerText()).toContain('ci reader');

    await search.fill('no such key');
    await alice.getByText('No keys match your search').waitFor();
    await alice.screenshot({ path: '/tmp/panel-search-empty.png' });

    await search.fill('');
    await alice.getByText('2 keys').waitFor();
  });

  it('deletes a key after a confirmation, and the gateway refuses it at once', async () => {
    const row = alice.locator('#keys-body tr', { hasText: 'sales export' });
    await row.getByRole('button', { name: /Delete key sales export/ }).click();
    const confirm = alice.getByRole('dialog', { name: 'Delete this key?' });
    await confirm.waitFor();
    // Cancel is focused first: Enter does not delete by accident.
    expect(await focused(alice)).toBe('button:Cancel');
    await alice.screenshot({ path: '/tmp/panel-delete.png' });
    await confirm.getByRole('button', { name: 'Delete key' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await alice.getByText('1 key', { exact: true }).waitFor();
    expect(await rows(alice).innerText()).toContain('ci reader');

    expect(await redisClient.get(redisKeys.apiKey(sha256(bdaKey)))).toBeNull();
    const refused = await callGateway('/events/bda/wf-sales/api/orders', bdaKey);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('unknown_api_key');
    // The other key still works.
    expect((await callGateway('/events/platform/api/v1/datasets', platformKey)).status).toBe(200);
  });

  it("never shows one user's keys to another", async () => {
    const bob = await openPanel('bob');
    await bob.getByText('No API keys yet').waitFor();
    expect(await rows(bob).count()).toBe(0);
    await bob.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = bob.getByRole('dialog', { name: 'Create an API key' });
    await dialog.locator('#role-bda option[value="wf-bob"]').waitFor({ state: 'attached' });
    expect(await dialog.locator('#role-bda option').allTextContents()).toEqual([
      'Choose a workflow…',
      'wf-bob — services: api',
    ]);
    await bob.context().close();
    // Alice's key is still there for her.
    await alice.reload();
    await alice.getByText('1 key', { exact: true }).waitFor();
  });

  it('fits a phone screen: the menu folds into a top bar and nothing overflows the page', async () => {
    await alice.setViewportSize({ width: 390, height: 844 });
    await alice.getByRole('button', { name: 'Create key' }).first().waitFor();
    await alice.screenshot({ path: '/tmp/panel-phone.png' });
    // Elements reaching past the screen's right edge (a table may scroll inside its own card).
    const overflowing = await alice.evaluate<string[]>(`[...document.querySelectorAll('body *')]
      .filter((e) => !e.closest('.table-card') && e.getBoundingClientRect().right > window.innerWidth + 1)
      .map((e) => e.tagName.toLowerCase() + '.' + e.className)`);
    expect(overflowing).toEqual([]);
    expect(await alice.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')).toBe(
      true,
    );
    expect(await alice.getByRole('link', { name: 'API keys' }).isVisible()).toBe(true);
    await alice.setViewportSize({ width: 1280, height: 800 });
  });

  it('shows every row whole at 1280 and 390 px wide: no action cut off, no table to scroll sideways', async () => {
    // A long name and several roles: what widens a row.
    await createKeyThroughDialog(alice, {
      module: 'platform',
      roles: ['viewer', 'editor', 'datasets:viewer'],
      name: 'nightly export of the quarterly ledger',
    });
    await closeReveal(alice);
    for (const [width, height] of [
      [1280, 800],
      [390, 844],
    ] as const) {
      await alice.setViewportSize({ width, height });
      await rows(alice).first().waitFor();
      await alice.screenshot({ path: `/tmp/panel-keys-${width}.png`, fullPage: true });
      const problems = await alice.evaluate<string[]>(`(() => {
        const card = document.querySelector('#keys-table').closest('.table-card');
        const edge = Math.min(window.innerWidth, card.getBoundingClientRect().right);
        const out = [];
        if (card.scrollWidth > card.clientWidth + 1) out.push('the table scrolls sideways: ' + card.scrollWidth + ' > ' + card.clientWidth);
        for (const b of document.querySelectorAll('#keys-body button')) {
          const r = b.getBoundingClientRect();
          if (r.right > edge + 1 || r.left < 0) out.push(b.getAttribute('aria-label') + ' cut off at ' + Math.round(r.right));
        }
        return out;
      })()`);
      expect([width, problems]).toEqual([width, []]);
      // Each action is there to press, named for the key it acts on.
      await alice
        .getByRole('button', { name: /Details of key nightly export of the quarterly ledger/ })
        .click({ trial: true });
    }
    // The audit log too: each event whole, nothing past the screen's edge, at both widths.
    await alice.getByRole('link', { name: 'Audit log' }).click();
    await alice.locator('#audit-body tr').first().waitFor();
    for (const [width, height] of [
      [1280, 800],
      [390, 844],
    ] as const) {
      await alice.setViewportSize({ width, height });
      await alice.screenshot({ path: `/tmp/panel-audit-${width}.png`, fullPage: true });
      const overflow = await alice.evaluate<string[]>(`(() => {
        const card = document.querySelector('#audit-table').closest('.table-card');
        const out = [];
        if (card.scrollWidth > card.clientWidth + 1) out.push('the table scrolls sideways');
        if (document.documentElement.scrollWidth > window.innerWidth) out.push('the page scrolls sideways');
        return out;
      })()`);
      expect([width, overflow]).toEqual([width, []]);
    }
    await alice.setViewportSize({ width: 1280, height: 800 });
    await alice.getByRole('link', { name: 'API keys' }).click();
    await rows(alice).first().waitFor();
  });

  it('works from the keyboard alone, and Escape forgets a shown key', async () => {
    const page = await openPanel('dave');
    await page.getByText('No API keys yet').waitFor();
    await page.getByRole('button', { name: 'Create key' }).first().focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.locator('#role-platform input[value="viewer"]').waitFor({ state: 'attached' });
    // dave owns no workflow: the dialog says how one appears instead of an empty list.
    await dialog.getByText('A workflow appears here once its Workflow record names you').waitFor();
    expect(await dialog.locator('#role-bda option').allTextContents()).toEqual(['You own no workflows yet']);
    // Focus starts on the module choice; arrow keys move between modules, as radio buttons do.
    expect(await focused(page)).toBe('input[module=bda]');
    await page.keyboard.press('ArrowRight');
    await dialog.locator('#role-field-platform').waitFor();
    expect(await focused(page)).toBe('input[module=platform]');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('input[platform-role=viewer]');
    await page.keyboard.press('Space');
    await page.keyboard.press('Enter');
    const reveal = page.getByRole('dialog', { name: 'Your new API key' });
    await reveal.waitFor();
    const key = await reveal.getByLabel('API key').inputValue();
    expect(key).toMatch(/^tgp_/);
    // The key field has focus and its text is selected, ready for Ctrl+C.
    expect(await focused(page)).toBe('input#reveal-key');
    await page.keyboard.press('Escape');
    await reveal.waitFor({ state: 'hidden' });
    await forgotten(page);
    expect(await pageContents(page)).not.toContain(key);
    await page.getByText('1 key', { exact: true }).waitFor();
    await page.context().close();
  });

  it('pages through many keys with "Load more"', async () => {
    const token = await issuer.mint('erin');
    for (let i = 0; i < 55; i++) {
      const res = await fetch(`${gatewayBase}/api/v1/apikeys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ module: 'platform', roles: ['viewer'], name: `batch ${i}` }),
      });
      expect(res.status).toBe(201);
    }
    const page = await openPanel('erin');
    await page.getByText('50 keys shown').waitFor();
    await page.getByRole('button', { name: 'Load more' }).click();
    await page.getByText('55 keys', { exact: true }).waitFor();
    expect(await rows(page).count()).toBe(55);
    expect(await page.getByRole('button', { name: 'Load more' }).isVisible()).toBe(false);
    const names = await page.locator('#keys-body .key-name').allTextContents();
    expect(new Set(names).size).toBe(55);
    await page.context().close();
  });

  it('asks for a token when there is none, and says why a token is refused', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${gatewayBase}/panel/`);
    const signIn = page.getByRole('region', { name: 'Sign in' });
    await signIn.waitFor();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Paste an access token to sign in.').waitFor();

    const forged = (await issuer.mint('mallory', { issuer: 'https://elsewhere.example' })).trim();
    await page.getByLabel('Access token').fill(forged);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .getByText(/Your sign-in was refused/)
      .waitFor();
    await signIn.waitFor();
    await page.screenshot({ path: '/tmp/panel-signin.png' });
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    await context.close();
  });

  it('serves the panel with a strict content security policy, and redirects /panel to /panel/', async () => {
    const res = await fetch(`${gatewayBase}/panel/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const bare = await fetch(`${gatewayBase}/panel`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/panel/');
    // The ES modules are served as JavaScript (a browser refuses modules of another type).
    const viaGateway = await fetch(`${gatewayBase}/panel/js/main.js`);
    expect(viaGateway.status).toBe(200);
    expect(viaGateway.headers.get('content-type')).toMatch(/javascript/);
  });
});

describe('rotation, usage and the audit trail in the panel', () => {
  let carol: Page;
  let oldKey: string;
  let newKey: string;

  const row = (page: Page, text: string) => page.locator('#keys-body tr', { hasText: text });

  it('rolls a key from its row: the new key is shown once, both are listed, linked, and the old one stops', async () => {
    carol = await openPanel('carol');
    oldKey = await createKeyThroughDialog(carol, {
      module: 'platform',
      roles: ['viewer'],
      name: 'nightly job',
    });
    await closeReveal(carol);
    await rows(carol).first().waitFor();
    const oldId = await row(carol, 'nightly job').getAttribute('data-key-id');

    await row(carol, 'nightly job')
      .getByRole('button', { name: /Roll key nightly job/ })
      .click();
    const dialog = carol.getByRole('dialog', { name: 'Roll this key?' });
    await dialog.waitFor();
    await dialog.getByLabel('Keep the old key working for').selectOption('0');
    await carol.screenshot({ path: '/tmp/panel-roll.png' });
    await dialog.getByRole('button', { name: 'Roll key' }).click();
    const reveal = carol.getByRole('dialog', { name: 'Your new API key' });
    await reveal.waitFor();
    newKey = await reveal.getByLabel('API key').inputValue();
    expect(newKey).toMatch(/^tgp_/);
    expect(newKey).not.toBe(oldKey);
    await closeReveal(carol);
    expect(await pageContents(carol)).not.toContain(newKey);

    // Both rows, the new one naming the key it replaces, the old one stopped and not rollable.
    await rows(carol).nth(1).waitFor();
    const oldRow = carol.locator(`#keys-body tr[data-key-id="${oldId ?? ''}"]`);
    await expect(oldRow.getAttribute('data-state')).resolves.toBe('expired');
    expect(await oldRow.innerText()).toMatch(/Rolled, stopped/);
    expect(await oldRow.getByRole('button', { name: /Roll key/ }).count()).toBe(0);
    const newRow = carol.locator('#keys-body tr[data-state="active"]', { hasText: 'nightly job' });
    expect(await newRow.innerText()).toContain(`replaces ${(oldId ?? '').slice(0, 8)}`);

    const refused = await callGateway('/events/platform/api/v1/datasets', oldKey);
    expect(refused).toMatchObject({ status: 401, body: { code: 'rolled_api_key' } });
    expect((await callGateway('/events/platform/api/v1/datasets', newKey)).status).toBe(200);
  });

  it("shows a key's usage in its row and, in its details, per minute, per hour, by endpoint, with its events", async () => {
    for (let i = 0; i < 2; i++) {
      expect((await callGateway('/events/platform/api/v1/datasets', newKey)).status).toBe(200);
    }
    // A refusal although the key exists: viewer may not write.
    const denied = await fetch(`${gatewayBase}/events/platform/api/v1/datasets`, {
      method: 'POST',
      headers: { authorization: `Apikey ${newKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(denied.status).toBe(403);
    await new Promise((r) => setTimeout(r, 300));
    await carol.reload();
    const newRow = carol.locator('#keys-body tr[data-state="active"]', { hasText: 'nightly job' });
    await newRow.waitFor();
    await newRow.getByRole('img', { name: '3 requests in the last 24 hours' }).waitFor();

    await newRow.getByRole('button', { name: /Details of key nightly job/ }).click();
    const details = carol.getByRole('dialog', { name: 'nightly job' });
    await details.waitFor();
    await details.getByText('3 (1 refused)').waitFor();
    await details.getByText('GET /events/platform/api/v1/datasets').waitFor();
    // One bar group per minute that saw calls, its figures in its title.
    const minute = details.locator('#details-minutes svg g');
    await expect(minute.count()).resolves.toBe(1);
    expect(await minute.locator('title').textContent()).toMatch(/3 requests, 1 refused/);
    await expect(details.locator('#details-hours svg g').count()).resolves.toBe(1);
    await details.locator('#details-events li[data-action="key.refused"]').waitFor();
    expect(await details.locator('#details-events').innerText()).toMatch(/Created by carol/);
    await carol.screenshot({ path: '/tmp/panel-details.png' });
    await details.getByRole('button', { name: 'Close' }).click();
    await details.waitFor({ state: 'hidden' });
  });

  it('lists the audit trail of the signed-in user, filtered by event', async () => {
    await carol.getByRole('link', { name: 'Audit log' }).click();
    await carol.getByRole('heading', { name: 'Audit log' }).waitFor();
    await carol.locator('#audit-body tr[data-action="key.rolled"]').waitFor();
    const all = await carol.locator('#audit-body tr').count();
    expect(all).toBeGreaterThanOrEqual(4);
    await carol.locator('#audit-action').selectOption('key.rolled');
    await carol.getByText('1 event', { exact: true }).waitFor();
    const rolledRow = carol.locator('#audit-body tr').first();
    expect(await rolledRow.innerText()).toMatch(/Rolled[\s\S]*carol/);
    // The key as its owner knows it: its name and first characters, not its internal id.
    const keyCell = rolledRow.locator('td').nth(2);
    const id = (await rolledRow.getAttribute('data-key-id')) ?? '';
    expect(await keyCell.innerText()).toMatch(new RegExp(`nightly job\\s+${oldKey.slice(0, 8)}…`));
    expect(await keyCell.innerText()).not.toContain(id);
    await carol.screenshot({ path: '/tmp/panel-audit.png' });
    // Never a key on the page.
    const contents = await pageContents(carol);
    expect(contents).not.toContain(oldKey);
    expect(contents).not.toContain(newKey);

    // Another user's audit log holds none of carol's events.
    const frank = await openPanel('frank');
    await frank.getByRole('link', { name: 'Audit log' }).click();
    await frank.getByText('No events').waitFor();
    await frank.context().close();
    await carol.context().close();
  });
  it('makes a key for one of the user’s identities; its details name it, and the identity’s credits hold', async () => {
    const token = await issuer.mint('grace');
    const made = await fetch(`${gatewayBase}/api/v1/identities`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'grace-team', displayName: 'Grace’s team', credits: { amount: 1 } }),
    });
    expect(made.status).toBe(201);
    const grace = await openPanel('grace');
    await grace.getByRole('button', { name: 'Create key' }).first().click();
    const dialog = grace.getByRole('dialog', { name: 'Create an API key' });
    await dialog.locator('#key-identity option[value="grace-team"]').waitFor({ state: 'attached' });
    await dialog.getByText('Platform REST resources').click();
    await dialog.locator('#role-platform input[value="viewer"]').check();
    await dialog.getByLabel('Name (optional)').fill('team reader');
    await dialog.getByLabel('Identity (optional)').selectOption('grace-team');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const key = await grace
      .getByRole('dialog', { name: 'Your new API key' })
      .getByLabel('API key')
      .inputValue();
    await closeReveal(grace);
    expect((await callGateway('/events/platform/api/v1/datasets', key)).status).toBe(200);
    const spent = await callGateway('/events/platform/api/v1/datasets', key);
    expect([spent.status, spent.body.code]).toEqual([429, 'credits_exhausted']);
    const row = grace.locator('#keys-body tr', { hasText: 'team reader' });
    await row.getByRole('button', { name: /Details of key team reader/ }).click();
    const details = grace.getByRole('dialog', { name: 'team reader' });
    await details.getByText(/^grace-team \(its limits and credits are shared/).waitFor();
    await details.getByRole('button', { name: 'Close' }).click();
    await grace.getByRole('link', { name: 'Audit log' }).click();
    await grace.locator('#audit-action').selectOption('identity.created');
    await grace.getByText('1 event', { exact: true }).waitFor();
    expect(await grace.locator('#audit-body tr').first().innerText()).toMatch(
      /Identity created[\s\S]*identity grace-team/,
    );
    // Another user cannot choose it.
    const frank = await openPanel('frank');
    await frank.getByRole('button', { name: 'Create key' }).first().click();
    const other = frank.getByRole('dialog', { name: 'Create an API key' });
    await other.locator('#role-platform input').first().waitFor({ state: 'attached' });
    expect(await other.locator('#key-identity option').allInnerTexts()).toEqual(['None']);
    await frank.context().close();
    await grace.context().close();
  });
});
