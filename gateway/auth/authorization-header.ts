import type { CallHead } from '../http/call-head.js';
import { isForeignKey, parseKey } from '../../common/apikey/format.js';
import { TollgateError, type ErrorCode } from '../../common/errors.js';
import type { Module } from '../../common/resources/grant.js';

/**
 * Strict parsing of `Authorization: Apikey <key>`: exactly the scheme word `Apikey` (this casing),
 * one space, a key of the right shape and checksum. Everything here is pure, so malformed
 * credentials are refused without a Redis round trip.
 */
const SCHEME = 'Apikey';
const HOW = 'send the header "Authorization: Apikey <key>"';
// Only a plain word is repeated in the answer: what else stands first may be the key itself (sent
// without the scheme, or glued to it by ":" or "="), and no part of a key is ever echoed.
const SCHEME_WORD = /^[A-Za-z][A-Za-z0-9-]{0,15}$/;

const unauthorized = (code: ErrorCode, message: string): TollgateError => new TollgateError(code, message);

export interface PresentedKey {
  key: string;
  /**
   * The module the key's prefix names; the index entry is still authoritative. Undefined for a
   * key of another gateway's format, which only an imported key's entry can grant anything to.
   */
  module: Module | undefined;
}

/**
 * The request's one Authorization header. Node keeps the first of several, and a proxy in front
 * may keep another: two are refused, so no two hops ever read different keys from one request.
 */
export function authorizationOf(req: CallHead): string | undefined {
  const raw = req.rawHeaders;
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 13 && name.toLowerCase() === 'authorization') seen++;
  }
  if (seen > 1) {
    fail('malformed_authorization', `the request carries ${seen} Authorization headers: ${HOW}, once`);
  }
  return req.headers.authorization;
}

export function parseAuthorizationHeader(header: string | undefined): PresentedKey {
  if (header === undefined) return fail('missing_api_key', `no Authorization header: ${HOW}`);
  // Node trims surrounding whitespace, so an all-blank value arrives as "".
  if (header === '' || header === SCHEME) {
    return fail('empty_api_key', `the Authorization header holds no key: ${HOW}`);
  }
  const space = header.indexOf(' ');
  const scheme = space === -1 ? header : header.slice(0, space);
  if (scheme !== SCHEME) {
    const hint =
      scheme.toLowerCase() === SCHEME.toLowerCase()
        ? `the scheme word is case-sensitive: write "${SCHEME}", not "${scheme}"`
        : SCHEME_WORD.test(scheme)
          ? `the scheme "${scheme}" is not accepted`
          : 'the header does not start with a scheme word';
    return fail('invalid_auth_scheme', `${hint}; ${HOW}`);
  }
  const key = header.slice(space + 1);
  if (key === '' || /\s/.test(key)) {
    return fail(
      'malformed_authorization',
      `put exactly one space between "${SCHEME}" and the key, and nothing after it`,
    );
  }
  const parsed = parseKey(key);
  if ('problem' in parsed && parsed.problem === 'malformed' && isForeignKey(key)) {
    return { key, module: undefined };
  }
  if ('problem' in parsed) {
    return parsed.problem === 'bad_checksum'
      ? fail(
          'invalid_key_checksum',
          'the key fails its checksum: it was mistyped or truncated; copy it again',
        )
      : fail(
          'malformed_api_key',
          'this is not a Tollgate key: keys start with tgb_ or tgp_ followed by 36 letters and digits',
        );
  }
  return { key, module: parsed.module };
}

function fail(code: ErrorCode, message: string): never {
  throw unauthorized(code, message);
}
