import { TollgateError, type ErrorCode } from '../../common/errors.js';

/**
 * Request paths are checked once, here, before any routing decision. Anything that could make
 * the gateway and an upstream disagree on which workflow, service or resource a path names is
 * refused with 400 rather than "cleaned up": dot segments (plain, percent-encoded, or hidden
 * behind `;` path parameters), encoded separators (`%2f`, `%5c`), backslashes, empty segments
 * (`//`), invalid percent-encoding or UTF-8 (overlong forms such as `%c0%ae`), control
 * characters, and separators or dots encoded twice (`%252e`), which a double-decoding upstream
 * would turn into the above.
 */
export interface NormalisedPath {
  /** Decoded segments, without the empty one before the leading slash. */
  segments: string[];
  /** The same segments exactly as sent (still percent-encoded): forwarded upstream verbatim. */
  raw: string[];
  /** True when the path ended with `/` (a final empty segment is the only empty one allowed). */
  trailingSlash: boolean;
  /** `?...` exactly as sent, or "". */
  query: string;
}

const bad = (code: ErrorCode, message: string): TollgateError =>
  new TollgateError(code, message, { field: 'path' });

const DOUBLE_ENCODED = /%(2e|2f|5c|25)/i;

function hasControlCharacter(segment: string): boolean {
  for (let i = 0; i < segment.length; i++) {
    const c = segment.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

function isDotSegment(segment: string): boolean {
  // `..;x` is `..` to servers that strip path parameters (Tomcat, Jetty).
  const semi = segment.indexOf(';');
  const name = semi === -1 ? segment : segment.slice(0, semi);
  return name === '.' || name === '..';
}

export function normalisePath(url: string): NormalisedPath {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q);
  if (path.charCodeAt(0) !== 47 /* / */) throw bad('invalid_path', 'the request path must start with "/"');
  if (path.includes('\\')) throw bad('backslash_in_path', 'backslashes are not allowed in the path');
  const raw = path.split('/');
  raw.shift();
  const trailingSlash = raw.length > 1 && raw[raw.length - 1] === '';
  if (trailingSlash) raw.pop();
  const segments = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const r = raw[i] as string;
    if (r === '') {
      if (raw.length === 1) break; // the path "/"
      throw bad('empty_path_segment', 'the path has an empty segment ("//"); remove the extra slash');
    }
    let segment = r;
    if (r.includes('%')) {
      try {
        segment = decodeURIComponent(r);
      } catch {
        throw bad('invalid_path_encoding', 'the path has invalid percent-encoding or invalid UTF-8');
      }
      if (segment.includes('/') || segment.includes('\\')) {
        throw bad('encoded_separator', 'encoded slashes (%2f, %5c) are not allowed in the path');
      }
      if (DOUBLE_ENCODED.test(segment)) {
        throw bad('double_encoded_path', 'the path is percent-encoded twice; send it encoded once');
      }
    }
    if (isDotSegment(segment)) {
      throw bad('path_traversal', 'dot segments ("." and "..", encoded or not) are not allowed in the path');
    }
    if (hasControlCharacter(segment)) {
      throw bad('invalid_path_encoding', 'control characters are not allowed in the path');
    }
    segments[i] = segment;
  }
  if (raw.length === 1 && raw[0] === '') return { segments: [], raw: [], trailingSlash: true, query };
  return { segments, raw, trailingSlash, query };
}
