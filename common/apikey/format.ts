import { hash, randomInt } from 'node:crypto';
import type { Module } from '../resources/grant.js';

/**
 * Key format: `tgb_` (module bda) or `tgp_` (module platform), 30 random base62 characters, then a
 * 6-character base62 CRC32 of everything before it. The checksum lets the gateway reject typos and
 * garbage without a Redis round trip, and lets secret scanners recognise leaked keys.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
export const KEY_PREFIXES: Readonly<Record<Module, string>> = { bda: 'tgb_', platform: 'tgp_' };
export const KEY_LENGTH = 4 + RANDOM_LENGTH + CHECKSUM_LENGTH;
/** Characters shown in listings; enough to tell keys apart, far too few to guess the rest. */
export const KEY_START_LENGTH = 8;
const KEY_PATTERN = /^tg[bp]_[0-9A-Za-z]{36}$/;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) {
    // Keys are ASCII by construction; anything else fails the pattern before reaching here.
    crc = (CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] as number) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** CRC32 in base62, left-padded to 6 characters (62^6 > 2^32, so it always fits). */
export function checksum(text: string): string {
  let n = crc32(text);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A new key from a cryptographically secure source (crypto.randomInt is unbiased). */
export function generateKey(module: Module): string {
  let body = KEY_PREFIXES[module];
  for (let i = 0; i < RANDOM_LENGTH; i++) body += BASE62[randomInt(62)];
  return body + checksum(body);
}

export type KeyShapeProblem = 'malformed' | 'bad_checksum';

/**
 * Checks a presented key's shape and checksum, with no I/O. Returns the module the prefix names,
 * or the problem found.
 */
export function parseKey(key: string): { module: Module } | { problem: KeyShapeProblem } {
  if (key.length !== KEY_LENGTH || !KEY_PATTERN.test(key)) return { problem: 'malformed' };
  const body = key.slice(0, KEY_LENGTH - CHECKSUM_LENGTH);
  if (checksum(body) !== key.slice(KEY_LENGTH - CHECKSUM_LENGTH)) return { problem: 'bad_checksum' };
  return { module: key.startsWith(KEY_PREFIXES.bda) ? 'bda' : 'platform' };
}

/**
 * A key made by another gateway, which an administrator imported by its SHA-256 (docs/keys.md,
 * "Keys brought along"): printable ASCII without spaces, 20 to 256 characters (listings show at most
 * 8 of them). Only looked up, never made: a value with Tollgate's own prefix is Tollgate's and must
 * pass its checksum.
 */
const FOREIGN_KEY = /^[\x21-\x7e]{20,256}$/;
const OWN_PREFIX = /^tg[bp]_/;
export const isForeignKey = (key: string): boolean => FOREIGN_KEY.test(key) && !OWN_PREFIX.test(key);

/** SHA-256 hex of the key: the only form in which a key is ever stored. */
export function hashKey(key: string): string {
  // One-shot hash(): a fraction of createHash()'s cost, and it runs on every gateway request.
  return hash('sha256', key, 'hex');
}

export const keyStart = (key: string): string => key.slice(0, KEY_START_LENGTH);
