import {
  checksum,
  generateKey,
  hashKey,
  KEY_LENGTH,
  keyStart,
  parseKey,
} from '../../../common/apikey/format.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('key format', () => {
  it('generates keys with the module prefix, 30 base62 characters and a checksum that parse back', () => {
    for (const module of ['bda', 'platform'] as const) {
      for (let i = 0; i < 200; i++) {
        const key = generateKey(module);
        expect(key).toMatch(module === 'bda' ? /^tgb_[0-9A-Za-z]{36}$/ : /^tgp_[0-9A-Za-z]{36}$/);
        expect(key).toHaveLength(KEY_LENGTH);
        expect(parseKey(key)).toEqual({ module });
        expect(key.slice(-6)).toBe(checksum(key.slice(0, -6)));
      }
    }
  });

  it('never repeats a key and spreads the random part over the whole alphabet', () => {
    const keys = Array.from({ length: 2000 }, () => generateKey('platform'));
    expect(new Set(keys).size).toBe(keys.length);
    const seen = new Set(keys.flatMap((k) => [...k.slice(4, 34)]));
    expect(seen.size).toBe(62);
  });

  it('rejects every single-character substitution anywhere in the key', () => {
    const key = generateKey('bda');
    let tried = 0;
    for (let i = 0; i < key.length; i++) {
      for (const c of BASE62 + '_') {
        if (c === key[i]) continue;
        const typo = key.slice(0, i) + c + key.slice(i + 1);
        const parsed = parseKey(typo);
        // A substitution inside the prefix can only turn tgb_ into tgp_: the checksum still fails.
        expect(parsed).toHaveProperty('problem');
        tried++;
      }
    }
    expect(tried).toBe(key.length * 62);
  });

  it('rejects adjacent transpositions, deletions and insertions', () => {
    const key = generateKey('platform');
    for (let i = 0; i < key.length - 1; i++) {
      if (key[i] === key[i + 1]) continue;
      const swapped = key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2);
      expect(parseKey(swapped)).toHaveProperty('problem');
    }
    expect(parseKey(key.slice(1))).toEqual({ problem: 'malformed' });
    expect(parseKey(key + 'a')).toEqual({ problem: 'malformed' });
  });

  it('names the problem: malformed shapes versus a bad checksum', () => {
    const key = generateKey('bda');
    const last = key.at(-1) === 'a' ? 'b' : 'a';
    expect(parseKey(key.slice(0, -1) + last)).toEqual({ problem: 'bad_checksum' });
    expect(parseKey('')).toEqual({ problem: 'malformed' });
    expect(parseKey('tgx_' + key.slice(4))).toEqual({ problem: 'malformed' });
    expect(parseKey('TGB_' + key.slice(4))).toEqual({ problem: 'malformed' });
    expect(parseKey(key.slice(0, 10) + '-' + key.slice(11))).toEqual({ problem: 'malformed' });
    expect(parseKey(key.slice(0, 10) + 'é' + key.slice(11))).toEqual({ problem: 'malformed' });
    expect(parseKey(` ${key.slice(1)}`)).toEqual({ problem: 'malformed' });
  });

  it('stores only a SHA-256 and shows only the first 8 characters', () => {
    const key = generateKey('platform');
    expect(hashKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashKey(key)).toBe(hashKey(key));
    expect(hashKey(key)).not.toBe(hashKey(generateKey('platform')));
    expect(keyStart(key)).toBe(key.slice(0, 8));
    expect(keyStart(key)).toMatch(/^tgp_[0-9A-Za-z]{4}$/);
  });

  it('computes the standard CRC32 (the checksum secret scanners recompute)', () => {
    // CRC32("123456789") = 0xCBF43926 = 3421780262, in base62: 3jLHue.
    expect(checksum('123456789')).toBe(toBase62(0xcbf43926));
  });
});

function toBase62(n: number): string {
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}
