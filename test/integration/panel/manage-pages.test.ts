// The panel's Identities and Webhooks pages in a real Chromium, against the real gateway and its
// management API (manifests, real Redis, a webhook receiver on loopback): every action, the API's
// refusals shown with their code and message, and every page checked with axe-core (no serious or
// critical violation) and driven by keyboard alone.
import { createRequire } from 'node:module';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { Browser, Locator, Page } from 'playwright-core';
import { createLogger } from '../../../common/logger.js';
import { WorkflowRoutes } from '../../../common/routes/workflow-routes.js';
import { createManagement } from '../../../gateway/api/management.js';
import { LocalIssuer } from '../../../gateway/auth/local-issuer.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../../gateway/config/webhook-settings.js';
import type { SharedServices } from '../../../gateway/services.js';
import { buildCentralGateway, type BuiltCentralGateway } from '../../../gateway/central-gateway.js';
import { noModels } from '../../../gateway/v2/model-directory.js';
import { freePort, launchChromium, redis } from '../../harness/index.js';
import { TEST_SIGNING_KEY_FILE } from '../signing.js';

const log = createLogger('panel-pages-test', 'silent');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let stateDir: string;
let redisClient: Redis;
let issuer: LocalIssuer;
let gateway: BuiltCentralGateway;
let base: string;
let browser: Browser;
let receiver: Server;
let receiverUrl: string;
let datasets: Server;
/** What the receiver answers: 500 until a test makes it healthy. */
let receiverStatus = 500;
const received: string[] = [];

beforeAll(async () => {
  const r = await redis('panel-pages');
  redisClient = new Redis(r.url);
  stateDir = await mkdtemp(join(tmpdir(), 'tollgate-panel-pages-'));
  issuer = await LocalIssuer.open(stateDir);
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(String(req.headers['webhook-id'] ?? ''));
      res.writeHead(receiverStatus).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  datasets = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
  });
  await new Promise<void>((resolve) => datasets.listen(0, '127.0.0.1', resolve));
  const datasetsUrl = `http://127.0.0.1:${(datasets.address() as AddressInfo).port}`;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const config = loadGatewayConfig({
    env: {},
    overrides: {
      grantSigningKeyFile: TEST_SIGNING_KEY_FILE,
      redisUrl: r.url,
      port,
      host: '127.0.0.1',
      auditUri: pathToFileURL(join(stateDir, 'audit')).href,
      upstreams: { datasets: datasetsUrl },
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
      identity: { local: { stateDir, selfUrl: base } },
      admin: { groupsClaim: 'groups', adminGroups: ['platform-admins'] },
      // The receiver is on loopback: allowed here, as an operator allows an internal network. No
      // retries: a delivery the receiver refuses is failed at once, for the replay.
      webhooks: {
        ...DEFAULT_WEBHOOK_SETTINGS,
        allowHttp: true,
        allowedCidrs: ['127.0.0.1/32'],
        retrySeconds: [],
        pollMs: 50,
      },
    });
  gateway = await buildCentralGateway(config, log, { models: noModels, management });
  await gateway.listen(port, '127.0.0.1');
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.shutdown();
  await new Promise((resolve) => receiver?.close(resolve));
  await new Promise((resolve) => datasets?.close(resolve));
  redisClient?.disconnect();
  if (stateDir !== undefined) await rm(stateDir, { recursive: true, force: true });
});

/** The panel signed in as `user`, on `hash`; axe-core is injected, so the page's CSP is bypassed. */
async function openPanel(user: string, hash: string, groups: string[] = []): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
  const page = await context.newPage();
  await page.goto(`${base}/panel/#token=${await issuer.mint(user, { groups })}`);
  await page.getByRole('heading', { name: 'API keys' }).waitFor();
  await page.evaluate(`window.location.hash = '${hash}'`);
  return page;
}

async function api(user: string, method: string, path: string, body?: unknown, groups: string[] = []) {
  const res = await fetch(`${base}/api/v1/${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await issuer.mint(user, { groups })}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    json: res.status === 204 ? {} : ((await res.json()) as Record<string, unknown>),
  };
}

/** axe-core's serious and critical violations on the page as it is now. */
async function violations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const result = await page.evaluate<
    Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>
  >(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => ({ target: n.target })) })))`,
  );
  return result
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

const cell = (page: Page, body: string, row: string) => page.locator(`#${body} tr`, { hasText: row });

/** Waits until what `loc` says holds `wanted`; fails with what it said instead. */
async function says(loc: Locator, wanted: RegExp | string): Promise<string> {
  let last = '';
  for (let i = 0; i < 200; i++) {
    last =
      (await loc
        .first()
        .textContent({ timeout: 5_000 })
        .catch(() => null)) ?? '';
    if (typeof wanted === 'string' ? last.includes(wanted) : wanted.test(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`expected ${String(wanted)}, the page says: ${JSON.stringify(last)}`);
}

/** Waits until nothing matches `loc`. */
async function gone(loc: Locator): Promise<void> {
  await loc.first().waitFor({ state: 'detached' });
  expect(await loc.count()).toBe(0);
}

describe('the Identities page', () => {
  it('creates an identity with a named limit and credits, shows what it has left, and refuses bad input with its code', async () => {
    const page = await openPanel('alice', '#identities');
    await page.getByRole('heading', { name: 'Identities' }).waitFor();
    await page.getByRole('button', { name: 'Create identity' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an identity' });
    await dialog.getByLabel('Name', { exact: true }).fill('Not A Name');
    await dialog.getByRole('button', { name: 'Create identity' }).click();
    await says(
      dialog.locator('#identity-name-error'),
      /an identity name is lower-case letters, digits and dashes .*\(invalid_[a-z_]+\)$/,
    );

    await dialog.getByLabel('Name', { exact: true }).fill('acme');
    await dialog.getByLabel('Display name (optional)').fill('ACME Corp');
    await dialog.getByLabel('Limit name').fill('per-day');
    await dialog.getByLabel('Requests').fill('1000');
    await dialog.getByLabel('Per seconds').fill('86400');
    await dialog.getByLabel('Amount').fill('500');
    await dialog.getByLabel('Refilled').selectOption('monthly');
    await dialog.getByRole('button', { name: 'Create identity' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const row = cell(page, 'identities-body', 'ACME Corp');
    await says(row, 'per-day: 1000 per 86400 s');
    await says(row, '500 of 500');
    await says(row, 'monthly');

    // The same name again: the API's 409, in the dialog's banner with its code.
    await page.getByRole('button', { name: 'Create identity' }).click();
    await dialog.getByLabel('Name', { exact: true }).fill('acme');
    await dialog.getByRole('button', { name: 'Create identity' }).click();
    await says(
      dialog.locator('#identity-error, #identity-name-error').filter({ hasText: /acme/ }),
      /an identity named "acme" exists already; choose another name \(identity_exists\)/,
    );
    await page.keyboard.press('Escape');
    expect(await violations(page)).toEqual([]);
    await page.context().close();
  });

  it('deletes an identity only once its keys are gone, saying what to do (identity_in_use)', async () => {
    await api('alice', 'POST', 'identities', { name: 'beta-team' });
    const key = await api('alice', 'POST', 'apikeys', {
      module: 'platform',
      roles: ['viewer'],
      identity: 'beta-team',
      name: 'beta reader',
    });
    expect(key.status).toBe(201);
    // One call its role allows, one it does not: the identity's usage counts both, each as it went.
    const asKey = (method: string) =>
      fetch(`${base}/events/platform/api/v1/datasets`, {
        method,
        headers: { authorization: `Apikey ${String(key.json.key)}` },
      });
    expect((await asKey('GET')).status).toBe(200);
    expect((await asKey('PUT')).status).toBe(403);
    for (let i = 0; i < 100; i++) {
      const usage = (await api('alice', 'GET', 'identities/beta-team')).json.usage as
        { requests: number } | undefined;
      if (usage?.requests === 1) break;
      await new Promise((done) => setTimeout(done, 100));
    }
    const page = await openPanel('alice', '#identities');
    const row = cell(page, 'identities-body', 'beta-team');
    await says(row, '1: beta reader');
    await says(row, '1 call (1 refused)');
    await row.getByRole('button', { name: 'Delete identity beta-team' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete identity beta-team?' });
    await confirm.getByRole('button', { name: 'Delete identity' }).click();
    await says(confirm.locator('#confirm-error'), /delete them first.*\(identity_in_use\)/);
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect((await api('alice', 'DELETE', `apikeys/${String(key.json.id)}`)).status).toBe(204);
    await row.getByRole('button', { name: 'Delete identity beta-team' }).click();
    await confirm.getByRole('button', { name: 'Delete identity' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await gone(cell(page, 'identities-body', 'beta-team'));
    await page.context().close();
  });

  it('lets an administrator change an identity’s limits and top up its credits; a user sees neither action', async () => {
    await api('bob', 'POST', 'identities', { name: 'gamma', credits: { amount: 100 } });
    const user = await openPanel('bob', '#identities');
    await cell(user, 'identities-body', 'gamma').waitFor();
    await gone(user.getByRole('button', { name: 'Top up the credits of gamma' }));
    await user.context().close();

    const admin = await openPanel('root', '#identities', ['platform-admins']);
    const row = cell(admin, 'identities-body', 'gamma');
    await says(row, '100 of 100');
    await row.getByRole('button', { name: 'Top up the credits of gamma' }).click();
    const topup = admin.getByRole('dialog', { name: 'Top up credits' });
    await topup.getByLabel('Credits to add').fill('0');
    await topup.getByRole('button', { name: 'Add credits' }).click();
    await says(topup.locator('#topup-error'), /\([a-z_]+\)$/);
    await topup.getByLabel('Credits to add').fill('50');
    await topup.getByRole('button', { name: 'Add credits' }).click();
    await topup.waitFor({ state: 'hidden' });
    await says(row, '150 of 100');

    await row.getByRole('button', { name: 'Change the limits and credits of gamma' }).click();
    const edit = admin.getByRole('dialog', { name: 'Limits and credits of gamma' });
    await edit.getByLabel('Limit name').fill('per-minute');
    await edit.getByLabel('Requests').fill('60');
    await edit.getByLabel('Per seconds').fill('60');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'hidden' });
    await says(row, 'per-minute: 60 per 60 s');
    expect(await violations(admin)).toEqual([]);
    await admin.context().close();
  });
});

describe('the Webhooks page', () => {
  it('registers an endpoint (its secret shown once), lists its last delivery, shows a failed one and sends it again', async () => {
    const page = await openPanel('carol', '#webhooks');
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
    await dialog.getByLabel('Endpoint URL').fill(receiverUrl);
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await says(dialog.locator('#webhook-events-error'), /choose at least one event/);
    await dialog.getByLabel('Endpoint URL').fill('http://10.9.8.7/hooks');
    await dialog.getByText('A key was created').click();
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await dialog
      .locator('#webhook-url-error, #webhook-error')
      .filter({ hasText: /10\.9\.8\.7|allowed|not/ })
      .waitFor();

    await dialog.getByLabel('Endpoint URL').fill(receiverUrl);
    await dialog.getByLabel('Description (optional)').fill('Key events to ops');
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    const reveal = page.getByRole('dialog', { name: 'The endpoint’s signing secret' });
    await reveal.waitFor();
    const secret = await reveal.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await reveal.getByRole('button', { name: 'I have stored it' }).click();
    const row = cell(page, 'webhooks-body', 'Key events to ops');
    await says(row, 'None yet');

    // A key made: its key.created delivery, refused by the receiver, is failed (no retries here).
    receiverStatus = 500;
    expect((await api('carol', 'POST', 'apikeys', { module: 'platform', roles: ['viewer'] })).status).toBe(
      201,
    );
    for (
      let i = 0;
      i < 100 && !/key\.created: failed \(HTTP 500\)/.test((await row.textContent()) ?? '');
      i++
    ) {
      // The list is read afresh each time the page is shown.
      await page.evaluate(`window.location.hash = '#keys'`);
      await page.evaluate(`window.location.hash = '#webhooks'`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await says(row, /key\.created: failed \(HTTP 500\)/);

    await row.getByRole('button', { name: 'Deliveries to Key events to ops' }).click();
    const deliveries = page.getByRole('dialog', { name: 'Deliveries to Key events to ops' });
    await deliveries.getByLabel('Show').selectOption('delivered');
    await deliveries.getByText('No deliveries of this kind.').waitFor();
    await deliveries.getByLabel('Show').selectOption('failed');
    const failed = deliveries.locator('#deliveries-body tr', { hasText: 'key.created' });
    await says(failed, 'HTTP 500');
    receiverStatus = 204;
    await failed.getByRole('button', { name: /^Send again: the key\.created delivery/ }).click();
    const delivered = deliveries.locator('#deliveries-body tr', { hasText: 'key.created' });
    for (let i = 0; i < 100; i++) {
      await deliveries.getByLabel('Show').selectOption('');
      await deliveries.getByLabel('Show').selectOption('delivered');
      if ((await delivered.count()) === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await says(delivered, 'delivered');
    expect(received.length).toBeGreaterThanOrEqual(2);
    expect(await violations(page)).toEqual([]);
    await deliveries.getByRole('button', { name: 'Close' }).click();

    // A new secret, shown once; the old one is gone.
    await row.getByRole('button', { name: 'Rotate secret of Key events to ops' }).click();
    await page
      .getByRole('dialog', { name: 'Rotate the signing secret?' })
      .getByRole('button', { name: 'Rotate secret' })
      .click();
    await reveal.waitFor();
    const rotated = await reveal.getByLabel('Signing secret').inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await reveal.getByRole('button', { name: 'I have stored it' }).click();

    await row.getByRole('button', { name: 'Delete the endpoint Key events to ops' }).click();
    await page
      .getByRole('dialog', { name: 'Delete this endpoint?' })
      .getByRole('button', { name: 'Delete endpoint' })
      .click();
    await gone(cell(page, 'webhooks-body', 'Key events to ops'));
    await page.context().close();
  });

  it('shows an administrator which endpoints take every user’s events', async () => {
    const made = await api(
      'root',
      'POST',
      'webhooks',
      { url: receiverUrl, events: ['key.revoked'], description: 'all revocations', allOwners: true },
      ['platform-admins'],
    );
    expect(made.status).toBe(201);
    const page = await openPanel('root', '#webhooks', ['platform-admins']);
    await says(cell(page, 'webhooks-body', 'all revocations'), 'Every user’s events');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('For every user’s keys, not mine alone (administrators)').waitFor();
    await page.keyboard.press('Escape');
    await page.context().close();
  });
});

describe('a key’s state in the list and its details', () => {
  it('shows each named limit’s window used, the identity’s credits and windows, and a key reported leaked', async () => {
    await api('erin', 'POST', 'identities', {
      name: 'delta',
      limits: [{ name: 'per-day', requests: 5000, windowSeconds: 86400 }],
      credits: { amount: 900, refill: 'daily' },
    });
    const made = await api('erin', 'POST', 'apikeys', {
      module: 'platform',
      roles: ['viewer'],
      name: 'limited one',
      identity: 'delta',
      limits: [{ name: 'per-minute', requests: 100, windowSeconds: 60 }],
      allowedCidrs: ['127.0.0.0/8'],
    });
    expect(made.status).toBe(201);
    for (let i = 0; i < 3; i++) {
      const call = await fetch(`${base}/events/platform/api/v1/datasets`, {
        headers: { authorization: `Apikey ${String(made.json.key)}` },
      });
      expect(call.status).toBe(200);
    }
    // As the leak-report route records a key a scanner found and Tollgate kept (report only).
    gateway.services.audit.record({
      action: 'key.leaked',
      keyId: String(made.json.id),
      owner: 'erin',
      actor: 'secret-scanning',
      detail: {
        url: 'https://github.com/acme/app/blob/main/.env',
        source: 'github',
        type: 'tollgate_platform_key',
        outcome: 'reported',
      },
    });
    await gateway.services.audit.flush();

    const page = await openPanel('erin', '#keys');
    const row = page.locator('#keys-body tr', { hasText: 'limited one' });
    await says(row, 'Reported leaked');
    // The list says what the key may still spend: its window, its identity and its shared credits.
    await says(row, /per-minute \d+\/100 · identity delta · \d+ shared credits left/);
    await row.getByRole('button', { name: /^Details of key limited one/ }).click();
    const details = page.getByRole('dialog', { name: 'limited one' });
    const leak = await says(details.locator('#details-leaked'), /Reported leaked/);
    expect(leak).toMatch(
      /found at https:\/\/github\.com\/acme\/app\/blob\/main\/\.env · by github · the key was kept working/,
    );
    const facts = await says(details.locator('#details-facts'), 'Windows now');
    const used = Number(/per-minute: (\d+) of 100 used this 60 s window/.exec(facts)?.[1]);
    // Counted by the gateway (leased a few calls ahead of what was spent).
    expect(used).toBeGreaterThanOrEqual(3);
    expect(used).toBeLessThanOrEqual(100);
    expect(facts).toMatch(/Identity’s credits\s*\d+ left \(900 a day\); next refill/);
    expect(facts).toMatch(/Identity’s windows now\s*per-day: \d+ of 5000 used this 86400 s window/);
    expect(facts).toMatch(/Networks\s*127\.0\.0\.0\/8/);
    expect(facts).toMatch(/Identity\s*delta/);
    expect(await violations(page)).toEqual([]);
    await page.context().close();
  });
});

describe('every page of the panel', () => {
  it.each(['#keys', '#audit', '#models', '#identities', '#webhooks', '#admin'])(
    '%s has no serious or critical accessibility violation (axe-core)',
    async (hash) => {
      const page = await openPanel('root', hash, ['platform-admins']);
      await page.locator(`${hash}-page`).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await violations(page)).toEqual([]);
      await page.context().close();
    },
  );

  it('is usable by keyboard alone: the menu to a page, its dialog opened, filled and closed', async () => {
    const page = await openPanel('dave', '#keys');
    // Through the side menu to Identities.
    let steps = 0;
    while (steps++ < 20) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate<string>('document.activeElement.textContent.trim()')) === 'Identities') break;
    }
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Identities' }).waitFor();
    // To "Create identity", and the dialog it opens, focused on its first field.
    steps = 0;
    while (steps++ < 20) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate<string>('document.activeElement.id')) === 'identity-create-open') break;
    }
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Create an identity' });
    await dialog.waitFor();
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('identity-name');
    await page.keyboard.type('keyboard-made');
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'hidden' });
    await cell(page, 'identities-body', 'keyboard-made').waitFor();
    await page.context().close();
  });
});
