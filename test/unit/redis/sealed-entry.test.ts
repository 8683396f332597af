import { generateStoredKey, publicJwk } from '../../../common/crypto/key-file.js';
import {
  EntrySealer,
  EntryVerifier,
  parseTrustedKeys,
  SEAL_PREFIX,
  sealOf,
  withSeal,
} from '../../../common/redis/sealed-entry.js';

describe('sealed Redis entries', () => {
  const key = 'tg:key:' + 'a'.repeat(64);
  const payload = JSON.stringify({ id: 'k1', owner: 'alice', module: 'bda', roles: ['wf'] });
  let sealer: EntrySealer;
  let verifier: EntryVerifier;

  beforeAll(async () => {
    const stored = await generateStoredKey();
    sealer = new EntrySealer(stored);
    verifier = EntryVerifier.forKey(stored);
  });

  it('opens what the signing key sealed, with the public half alone', async () => {
    const sealed = await sealer.seal(key, payload);
    expect(sealed.startsWith(`${SEAL_PREFIX}${sealer.kid}.`)).toBe(true);
    expect(sealed.endsWith(payload)).toBe(true);
    expect(verifier.open(key, sealed)).toEqual({ ok: true, payload });
  });

  it('refuses an unsealed value, a changed payload, a moved entry and another key’s seal', async () => {
    expect(verifier.open(key, payload)).toEqual({ ok: false, issue: 'not sealed' });
    expect(verifier.open(key, `${SEAL_PREFIX}x`)).toEqual({ ok: false, issue: 'not sealed' });
    const sealed = await sealer.seal(key, payload);
    const widened = sealed.replace('["wf"]', '["wf","other"]');
    expect(verifier.open(key, widened)).toEqual({ ok: false, issue: 'bad signature' });
    // The same sealed value under another key hash grants nothing there.
    expect(verifier.open('tg:key:' + 'b'.repeat(64), sealed)).toEqual({ ok: false, issue: 'bad signature' });
    const forger = new EntrySealer(await generateStoredKey());
    expect(verifier.open(key, await forger.seal(key, payload))).toEqual({
      ok: false,
      issue: 'sealed with a key this process does not trust',
    });
    // A forger who reuses the trusted kid still cannot make the signature.
    const forged = (await forger.seal(key, payload)).replace(
      `${SEAL_PREFIX}${forger.kid}.`,
      `${SEAL_PREFIX}${sealer.kid}.`,
    );
    expect(verifier.open(key, forged)).toEqual({ ok: false, issue: 'bad signature' });
  });

  it('writes a kept seal back over the same payload, and over no other', async () => {
    const sealed = await sealer.seal(key, payload);
    const seal = sealOf(sealed);
    expect(seal.startsWith(`${sealer.kid}.`)).toBe(true);
    expect(seal).not.toContain(payload);
    expect(withSeal(seal, payload)).toBe(sealed);
    expect(verifier.open(key, withSeal(seal, payload)).ok).toBe(true);
    expect(verifier.open(key, withSeal(seal, payload.replace('wf', 'other')))).toEqual({
      ok: false,
      issue: 'bad signature',
    });
  });

  it('takes trusted keys only as a JWKS of public EC keys', async () => {
    const stored = await generateStoredKey();
    const trusted = parseTrustedKeys(JSON.stringify({ keys: [publicJwk(stored)] }));
    expect(new EntryVerifier(trusted).open(key, await new EntrySealer(stored).seal(key, payload)).ok).toBe(
      true,
    );
    expect(() => parseTrustedKeys('nope')).toThrow(/not JSON/);
    expect(() => parseTrustedKeys('{"keys":[]}')).toThrow(/at least one public key/);
    expect(() => parseTrustedKeys(JSON.stringify({ keys: [stored] }))).toThrow(/private part/);
  });
});
