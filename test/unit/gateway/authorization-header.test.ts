import { generateKey } from '../../../common/apikey/format.js';
import { TollgateError } from '../../../common/errors.js';
import { parseAuthorizationHeader } from '../../../gateway/auth/authorization-header.js';

const key = generateKey('bda');

function code(header: string | undefined): string {
  try {
    parseAuthorizationHeader(header);
  } catch (err) {
    if (err instanceof TollgateError && err.status === 401) return err.code;
    throw err;
  }
  throw new Error(`${header} was accepted`);
}

describe('parseAuthorizationHeader', () => {
  it('accepts exactly "Apikey <key>" and names the module', () => {
    expect(parseAuthorizationHeader(`Apikey ${key}`)).toEqual({ key, module: 'bda' });
    const platform = generateKey('platform');
    expect(parseAuthorizationHeader(`Apikey ${platform}`).module).toBe('platform');
  });

  it.each([
    ['missing', undefined, 'missing_api_key'],
    ['empty', '', 'empty_api_key'],
    ['scheme only', 'Apikey', 'empty_api_key'],
    ['lower-case scheme', `apikey ${key}`, 'invalid_auth_scheme'],
    ['upper-case scheme', `APIKEY ${key}`, 'invalid_auth_scheme'],
    ['bearer', `Bearer ${key}`, 'invalid_auth_scheme'],
    ['no scheme', key, 'invalid_auth_scheme'],
    ['two spaces', `Apikey  ${key}`, 'malformed_authorization'],
    ['tab inside', `Apikey ${key}\tx`, 'malformed_authorization'],
    ['two keys', `Apikey ${key} ${key}`, 'malformed_authorization'],
    ['too short', `Apikey ${key.slice(0, -1)}`, 'malformed_api_key'],
    ["Tollgate's prefix, another shape", 'Apikey tgp_sk_live_0123456789abcdef', 'malformed_api_key'],
    ['too short for any key', 'Apikey sk_0123456789', 'malformed_api_key'],
    ['not printable ASCII', 'Apikey sk_live_0123456789abcdé', 'malformed_api_key'],
    ['bad checksum', `Apikey ${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`, 'invalid_key_checksum'],
    [
      'typo in the body',
      `Apikey ${key.slice(0, 10)}${key[10] === 'a' ? 'b' : 'a'}${key.slice(11)}`,
      'invalid_key_checksum',
    ],
  ])('%s → %s', (_what, header, expected) => {
    expect(code(header)).toBe(expected);
  });

  it.each([
    ['another prefix', `tgx_${key.slice(4)}`],
    ["another gateway's key", 'sk_live_51HqLyjWDarjtT1zdp7dcXYZ'],
    ['a long token', `ak-${'x'.repeat(253)}`],
  ])(
    'passes a key of another format (%s) on to be looked up, naming no module: only an imported key has its hash',
    (_what, value) => {
      expect(parseAuthorizationHeader(`Apikey ${value}`)).toEqual({ key: value, module: undefined });
    },
  );

  it('refuses a value longer than any key without looking it up', () => {
    expect(code(`Apikey ak-${'x'.repeat(254)}`)).toBe('malformed_api_key');
  });

  it.each([
    ['sent without the scheme', key],
    ['glued to the scheme', `Apikey:${key}`],
    ['followed by text', `${key} extra`],
  ])('never echoes a key %s', (_what, header) => {
    expect(code(header)).toBe('invalid_auth_scheme');
    try {
      parseAuthorizationHeader(header);
    } catch (err) {
      expect((err as Error).message).not.toContain(key.slice(0, 5));
    }
  });

  it('names a wrong scheme word, so the caller sees what was refused', () => {
    expect(() => parseAuthorizationHeader(`Bearer ${key}`)).toThrow('the scheme "Bearer" is not accepted');
  });

  it('never echoes the key in its messages', () => {
    try {
      parseAuthorizationHeader(`Apikey ${key.slice(0, -1)}X`);
    } catch (err) {
      expect((err as Error).message).not.toContain(key.slice(4, 20));
    }
  });
});
