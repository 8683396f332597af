import type { IncomingHttpHeaders } from 'node:http';
import { TollgateError } from '../../common/errors.js';

/**
 * The headers, query parameter and body field with which common server frameworks (Express's
 * method-override, ASP.NET, Jersey, Rack, Laravel and Symfony) let a POST stand for another method.
 */
export const OVERRIDE_HEADERS: readonly string[] = [
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
];
/**
 * Whether a field name is `_method` to some framework: PHP cuts a name at NUL, drops leading
 * spaces and makes a leading ".", " " or "[" an "_"; Rack strips the brackets around a name, and
 * qs reads `[_method]` as `_method`; `_method[...]` is the same field as an array. Broad on
 * purpose: a legitimate platform field is not named so.
 */
function namesOverride(name: string): boolean {
  return /^[\s[\]]*[_.[][\]]*method(?![a-z0-9_])/i.test(name.split('\0', 1)[0] ?? '');
}

const refusal = (what: string, field: string): TollgateError =>
  new TollgateError(
    'method_override',
    `${what} asks the resource to take this call as another method; the gateway checks a key's roles against the method it sees, so send the call with the method you mean (GET, PUT or POST)`,
    { field },
  );

/**
 * A platform key's roles allow methods, and the gateway checks the method it sees: a call that
 * asks its upstream to act as another method (a POST that means DELETE) is refused, not passed on
 * for the upstream to honour. `query`: the request's, with its leading `?` (or empty).
 */
export function refuseMethodOverride(headers: IncomingHttpHeaders, query: string): void {
  const header = OVERRIDE_HEADERS.find((name) => headers[name] !== undefined);
  if (header !== undefined) throw refusal(`the ${header} header`, header);
  const parameter = [...new URLSearchParams(query).keys()].find(namesOverride);
  if (parameter !== undefined) throw refusal(`the ${JSON.stringify(parameter)} parameter`, '_method');
}

/** How a body carries its fields, for the frameworks that read `_method` from it. */
export type FieldedBody = 'form' | 'multipart' | 'json';

/**
 * How a POST's body could carry a `_method` field some framework honours (Rack, Symfony, Laravel
 * and Express's method-override act on POST alone), read as loosely as the loosest of them reads
 * a Content-Type: a form when there is none (Rack) or it mentions one (Rack and PHP cut the type
 * at ",", ";" or a space), multipart likewise, JSON when it says `/json` or `+json` anywhere
 * (Laravel; body-parser's `application/json` and `+json`).
 * `contentTypes` and `contentEncodings`: every one the upstream will get (Node keeps the first
 * Content-Type; an upstream may read another, so two are refused). A body that is compressed, or
 * in a charset other than UTF-8's subsets, is refused: a framework would decode it, the check
 * could not read it.
 */
export function fieldedBody(
  method: string,
  contentTypes: readonly string[],
  contentEncodings: readonly string[],
): FieldedBody[] {
  if (method !== 'POST') return [];
  if (contentTypes.length > 1) {
    throw new TollgateError('bad_request', 'the request has more than one Content-Type header; send one', {
      field: 'content-type',
    });
  }
  const type = (contentTypes[0] ?? '').toLowerCase();
  const forms: FieldedBody[] = [];
  if (type.trim() === '' || type.includes('urlencoded') || type.includes('form')) forms.push('form');
  if (type.includes('multipart') || type.includes('form-data')) forms.push('multipart');
  if (/[/+]json/.test(type)) forms.push('json');
  if (forms.length === 0) return forms;
  const encoding = contentEncodings
    .join(',')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .find((t) => t !== '' && t !== 'identity');
  if (encoding !== undefined) {
    throw new TollgateError(
      'unsupported_media_type',
      `a platform POST with a form or JSON body is read by the gateway before it is sent on, and it cannot read it as ${JSON.stringify(encoding.slice(0, 40))}; send it uncompressed`,
      { field: 'content-encoding' },
    );
  }
  // Every charset the type names: parsers differ on which one they take.
  const charset = [...type.matchAll(/charset\s*=\s*"?([^";,\s]*)/g)]
    .map((m) => m[1] ?? '')
    .find((c) => !READABLE_CHARSETS.has(c));
  if (charset !== undefined) {
    throw new TollgateError(
      'unsupported_media_type',
      `a platform POST with a form or JSON body is read by the gateway before it is sent on, and it cannot read charset ${JSON.stringify(charset.slice(0, 40))}; send it as UTF-8`,
      { field: 'content-type' },
    );
  }
  return forms;
}

/** Charsets in which `_method` is the bytes the checks look for. */
const READABLE_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii', 'iso-8859-1', 'latin1']);

/** Refuses a body (read whole) with a field that overrides the method, in any of `forms`. */
export function refuseOverrideInBody(forms: readonly FieldedBody[], body: Buffer): void {
  for (const form of forms) {
    const found =
      form === 'form' ? formField(body) : form === 'multipart' ? multipartField(body) : jsonField(body);
    if (found !== undefined) throw refusal(`the body's ${JSON.stringify(found)} field`, '_method');
  }
}

function formField(body: Buffer): string | undefined {
  return [...new URLSearchParams(body.toString('utf8')).keys()].find(namesOverride);
}

/**
 * A part's name wherever the body says `name=` (not `filename=`): in any header of any part, on a
 * folded line, quoted with either quote or not, escaped, percent-encoded or RFC 5987-encoded. A
 * parser laxer than a strict one (another line ending, a boundary off by a byte, the header block
 * searched as a whole as Rack does) still finds the part, so this looks at more than any of them
 * would. A file whose content happens to say so is refused too; it would be a strange file.
 */
const NAME_PARAMETER = /(?<![a-z0-9_-])name(\*?)\s*=\s*["']?([^\r\n]{0,200})/gi;
/** Rack names a part without `name=` by its Content-ID. */
const CONTENT_ID = /content-id\s*:\s*<?([^\r\n>]{0,200})/gi;

/** RFC 2231 continuations (`name*0="_me"; name*1*=thod`): one name in pieces, joined in order. */
const NAME_PIECE = /(?<![a-z0-9_-])name\*(\d{1,3})(\*?)\s*=\s*(?:"([^"\r\n]{0,200})"|([^;\s]{0,200}))/gi;

function multipartField(body: Buffer): string | undefined {
  const text = body.toString('latin1');
  for (const m of text.matchAll(CONTENT_ID)) {
    const id = (m[1] ?? '').trim();
    if ([id, encodedWords(id)].some(namesOverride)) return id;
  }
  for (const m of text.matchAll(NAME_PARAMETER)) {
    const raw = (m[2] ?? '').replace(/\\(.)/g, '$1');
    const extended = m[1] === '*' ? raw.replace(/^[^']*'[^']*'/, '') : raw;
    const name = nameForms(raw, extended).find(namesOverride);
    if (name !== undefined) return name.replace(/["';\s].*$/, '');
  }
  // Each part's pieces, in their numbered order (Python's email.utils sorts them; a parser may
  // read `name*00` as the first).
  for (const part of text.split(/\r?\n--/)) {
    const pieces = [...part.matchAll(NAME_PIECE)]
      .map((m) => ({ index: Number(m[1]), extended: m[2] === '*', value: m[3] ?? m[4] ?? '' }))
      .sort((a, b) => a.index - b.index);
    if (pieces.length === 0) continue;
    const joined = pieces
      .map((p, i) => (i === 0 && p.extended ? p.value.replace(/^[^']*'[^']*'/, '') : p.value))
      .join('');
    const name = nameForms(joined, joined).find(namesOverride);
    if (name !== undefined) return name;
  }
  return undefined;
}

/**
 * Every way a framework could read a part's name: as sent, its RFC 5987 value, percent-decoded,
 * and with RFC 2047 encoded-words decoded (Commons FileUpload, and so Tomcat and Spring, read
 * `=?UTF-8?B?X21ldGhvZA==?=` as `_method`), of either.
 */
function nameForms(raw: string, extended: string): string[] {
  const forms = [raw, extended, percentDecoded(extended)].filter((n): n is string => n !== undefined);
  return [...forms, ...forms.map(encodedWords)];
}

/**
 * RFC 2047 encoded-words decoded (`=?charset?B?base64?=`, `=?charset?Q?quoted?=`), the space
 * between two of them dropped as the RFC says. Read as UTF-8 whatever charset is named: the name
 * checked for is ASCII, the same bytes in each charset a parser would honour.
 */
function encodedWords(text: string): string {
  if (!text.includes('=?')) return text;
  return text
    .replace(/(\?=)\s+(?==\?)/g, '$1')
    .replace(
      /=\?([^?\s]{1,40})\?([bq])\?([^?\s]{0,400})\?=/gi,
      (_word, charset: string, kind: string, data: string) => {
        // A parser decodes in the charset the word names (UTF-16 makes `_method` of other bytes):
        // one the check cannot read as the parser would is refused.
        const named = charset.toLowerCase().split('*', 1)[0] ?? '';
        if (!READABLE_CHARSETS.has(named)) {
          throw new TollgateError(
            'unsupported_media_type',
            `a multipart part is named in charset ${JSON.stringify(charset.slice(0, 40))}, which the gateway cannot read as the resource would; name parts in UTF-8`,
            { field: 'content-disposition' },
          );
        }
        return kind.toLowerCase() === 'b'
          ? Buffer.from(data, 'base64').toString(
              named.startsWith('utf') || named.endsWith('ascii') ? 'utf8' : 'latin1',
            )
          : data
              .replace(/_/g, ' ')
              .replace(/=([0-9a-f]{2})/gi, (_m, hex: string) =>
                String.fromCharCode(Number.parseInt(hex, 16)),
              );
      },
    );
}

function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function jsonField(body: Buffer): string | undefined {
  if (body.length === 0) return undefined;
  let parsed: unknown;
  try {
    // A NUL is no part of UTF-8 JSON text, and is how UTF-16 and UTF-32 look read as UTF-8.
    if (body.includes(0)) throw new Error('NUL');
    // A UTF-8 byte order mark, which body parsers skip.
    parsed = JSON.parse(body.toString('utf8').replace(/^\uFEFF/, ''));
  } catch {
    // Not JSON to this parser, and a laxer one (comments, trailing commas, another charset sniffed)
    // might still read a field in it that this one cannot see.
    throw new TollgateError(
      'invalid_json',
      'a platform POST whose Content-Type says JSON is read by the gateway before it is sent on, and this body is not UTF-8 JSON; send valid JSON',
      { field: 'body' },
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  return Object.keys(parsed).find(namesOverride);
}
