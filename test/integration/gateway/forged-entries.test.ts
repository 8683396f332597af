import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT, importJWK } from 'jose';
import { generateKey, hashKey } from '../../../common/apikey/format.js';
import { generateStoredKey, publicJwk } from '../../../common/crypto/key-file.js';
import { EntrySealer } from '../../../common/redis/sealed-entry.js';
import { keyChangeTag, redisChannels, redisKeys, routeChangeTag } from '../../../common/redis/schema.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import type { GatewayServices } from '../../../gateway/services.js';
import { createSidecar, type Sidecar } from '../../../gateway/sidecar/sidecar.js';
import { redis } from '../../harness/index.js';
import { TEST_TRUSTED_KEYS } from '../signing.js';
import {
  apikey,
  createKey,
  newId,
  redisClient,
  registerService,
  send,
  startGateway,
  startUpstream,
  uniqueName,
  type TestGateway,
  type Upstream,
  sidecarServices,
} from './support.js';

/**
 * Redis grants nothing by itself: whoever can write it (a pod that reached it, a leaked password)
 * writes entries straight into a real Redis here, as an attacker would, and every gateway and
 * sidecar refuses them. Only entries sealed with the operator's signing key are believed.
 */
describe('entries the operator did not write', () => {
  let upstream: Upstream;
  let attacker: Upstream;
  let gw: TestGateway;
  let r: ReturnType<typeof redisClient>;
  const wfA = uniqueName('wfa');
  const wfB = uniqueName('wfb');
  /** A key pair the attacker made: its seals verify nowhere. */
  let forger: EntrySealer;
  let forgerKey: Awaited<ReturnType<typeof generateStoredKey>>;

  beforeAll(async () => {
    const info = await redis('forged-entries');
    r = redisClient(info.url);
    upstream = await startUpstream();
    attacker = await startUpstream();
    await registerService(r, wfA, 'svc', `${upstream.url}/a`);
    await registerService(r, wfB, 'svc', `${upstream.url}/b`);
    gw = await startGateway({ redisUrl: info.url });
    forgerKey = await generateStoredKey();
    forger = new EntrySealer(forgerKey);
  });

  afterAll(async () => {
    await gw.stop();
    await upstream.close();
    await attacker.close();
    r.disconnect();
  });

  beforeEach(() => {
    upstream.seen.length = 0;
    attacker.seen.length = 0;
  });

  /** Writes `value` at `key` and announces it, as a writer with full access could. */
  async function plant(key: string, value: string, channel: string, message: string): Promise<void> {
    await r.set(key, value);
    await r.publish(channel, message);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }

  const grantFor = (roles: string[], extra: Partial<KeyGrant> = {}): KeyGrant => ({
    id: newId(),
    owner: 'mallory',
    module: 'bda',
    roles,
    ...extra,
  });

  it('refuses a key entry written as plain JSON, or sealed with any key but the operator’s', async () => {
    for (const seal of [
      async (k: string, p: string) => p,
      (k: string, p: string) => forger.seal(k, p),
      // The attacker's own key under the trusted key's id: the signature still fails.
      async (k: string, p: string) =>
        (await forger.seal(k, p)).replace(forger.kid, JSON.parse(TEST_TRUSTED_KEYS).keys[0].kid),
    ]) {
      const key = generateKey('bda');
      const redisKey = redisKeys.apiKey(hashKey(key));
      await plant(
        redisKey,
        await seal(redisKey, JSON.stringify(grantFor([wfA]))),
        redisChannels.keys,
        keyChangeTag(hashKey(key)),
      );
      const answer = await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(key) });
      expect([answer.status, answer.json.code]).toEqual([401, 'unknown_api_key']);
    }
    expect(upstream.seen).toEqual([]);
  });

  it.each([
    ['a widened role', (g: KeyGrant) => ({ ...g, roles: [wfB] })],
    ['a lifted expiry', (g: KeyGrant) => ({ ...g, expiresAt: undefined })],
    ['a lifted roll', (g: KeyGrant) => ({ ...g, expiresAt: undefined, rolledTo: undefined })],
    ['another owner', (g: KeyGrant) => ({ ...g, owner: 'mallory' })],
  ])('refuses a real entry edited to give %s', async (_what, edit) => {
    const created = await createKey(r, 'bda', [wfA], {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    const redisKey = redisKeys.apiKey(created.hash);
    const sealed = (await r.get(redisKey)) ?? '';
    const payload = sealed.slice(sealed.lastIndexOf('.{') + 1);
    expect(JSON.parse(payload)).toEqual(created.grant);
    const edited = sealed.slice(0, sealed.length - payload.length) + JSON.stringify(edit(created.grant));
    await plant(redisKey, edited, redisChannels.keys, keyChangeTag(created.hash));
    for (const wf of [wfA, wfB]) {
      const answer = await send(gw.url, `/events/bda/${wf}/svc/x`, { headers: apikey(created.key) });
      expect([answer.status, answer.json.code]).toEqual([401, 'unknown_api_key']);
    }
    expect(upstream.seen).toEqual([]);
  });

  it('refuses a real entry copied under another key’s hash', async () => {
    const victim = await createKey(r, 'bda', [wfA]);
    const mine = generateKey('bda');
    const sealed = (await r.get(redisKeys.apiKey(victim.hash))) ?? '';
    await plant(redisKeys.apiKey(hashKey(mine)), sealed, redisChannels.keys, keyChangeTag(hashKey(mine)));
    const answer = await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(mine) });
    expect([answer.status, answer.json.code]).toEqual([401, 'unknown_api_key']);
    // The victim's own key still works.
    expect((await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(victim.key) })).status).toBe(
      200,
    );
  });

  it('follows no route the operator did not write: rewritten, forged or moved', async () => {
    const { key } = await createKey(r, 'bda', [wfA]);
    const routeKey = redisKeys.bdaRoute(wfA, 'svc');
    const original = (await r.get(routeKey)) ?? '';
    try {
      // The operator's seal over another URL.
      const rewritten = original.replace(`${upstream.url}/a`, attacker.url);
      expect(rewritten).not.toBe(original);
      await plant(routeKey, rewritten, redisChannels.routes, routeChangeTag(routeKey));
      let answer = await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(key) });
      expect([answer.status, answer.json.code]).toEqual([404, 'unknown_service']);
      // A new route, plain JSON.
      await plant(
        routeKey,
        JSON.stringify({ url: attacker.url, owner: 'mallory' }),
        redisChannels.routes,
        routeChangeTag(routeKey),
      );
      answer = await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(key) });
      expect([answer.status, answer.json.code]).toEqual([404, 'unknown_service']);
      // Workflow B's real route, copied over workflow A's: it sealed another Redis key.
      await plant(
        routeKey,
        (await r.get(redisKeys.bdaRoute(wfB, 'svc'))) ?? '',
        redisChannels.routes,
        routeChangeTag(routeKey),
      );
      answer = await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(key) });
      expect([answer.status, answer.json.code]).toEqual([404, 'unknown_service']);
      expect(attacker.seen).toEqual([]);
      expect(upstream.seen).toEqual([]);
    } finally {
      await plant(routeKey, original, redisChannels.routes, routeChangeTag(routeKey));
    }
    expect((await send(gw.url, `/events/bda/${wfA}/svc/x`, { headers: apikey(key) })).status).toBe(200);
  });

  describe('a sidecar', () => {
    let services: GatewayServices;
    let sidecar: Sidecar;
    let sidecarUrl: string;
    let dir: string;

    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'tollgate-forged-'));
      services = await sidecarServices((await redis('forged-entries')).url);
      sidecar = createSidecar(services, {
        kind: 'workflow',
        namespace: 'default',
        upstream: new URL(upstream.url),
        workflow: wfA,
        service: 'svc',
      });
      sidecarUrl = `http://127.0.0.1:${(await sidecar.traffic.listen(0, '127.0.0.1')).port}`;
    });

    afterAll(async () => {
      await sidecar?.traffic.shutdown();
      await rm(dir, { recursive: true, force: true });
    });

    it('holds no key that could seal an entry', () => {
      expect(services.trust.sealer).toBeUndefined();
    });

    it('believes no grant key set written into Redis', async () => {
      // Where sidecars once looked the grant keys up: the attacker's own public key.
      await r.set('tg:grant:keys', JSON.stringify({ keys: [publicJwk(forgerKey)] }));
      const now = Math.floor(Date.now() / 1000);
      const grant = await new SignJWT({ kid: newId(), own: 'mallory', mod: 'bda', roles: [wfA] })
        .setProtectedHeader({ alg: 'ES256', kid: forgerKey.kid, typ: 'tollgate-grant+jwt' })
        .setIssuer('urn:tollgate:gateway')
        .setAudience(`urn:tollgate:service:default/${wfA}/svc`)
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setExpirationTime(now + 10)
        .sign(await importJWK(forgerKey, 'ES256'));
      const answer = await send(sidecarUrl, '/x', { headers: { 'x-tollgate-grant': grant } });
      expect([answer.status, answer.json.code]).toEqual([401, 'invalid_grant']);
      expect(upstream.seen).toEqual([]);
    });

    it('refuses a forged key entry, and takes a real one', async () => {
      const key = generateKey('bda');
      const redisKey = redisKeys.apiKey(hashKey(key));
      await plant(redisKey, JSON.stringify(grantFor([wfA])), redisChannels.keys, keyChangeTag(hashKey(key)));
      const forged = await send(sidecarUrl, '/x', { headers: apikey(key) });
      expect([forged.status, forged.json.code]).toEqual([401, 'unknown_api_key']);
      expect(upstream.seen).toEqual([]);
      const real = await createKey(r, 'bda', [wfA]);
      expect((await send(sidecarUrl, '/x', { headers: apikey(real.key) })).status).toBe(200);
    });
  });
});
