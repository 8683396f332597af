import type { IncomingHttpHeaders } from 'node:http';
import { TollgateError } from '../../common/errors.js';

/**
 * The headers, query parameter and body field with which common server frameworks (Express's
 * method-override, ASP.NET, Jersey, Rack, Laravel and Symfony) let a POST stand for another method.
 */
const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const;
/**
 * `_method`, in any case, and the names PHP turns into it: it drops leading spaces and makes a
 * leading ".", " " or "[" an "_", and `_method[...]` is the same field as an array.
 */
const OVERRIDE_NAME = /^\s*[_.\s[]method(?:\[|$)/i;

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
  const parameter = [...new URLSearchParams(query).keys()].find((k) => OVERRIDE_NAME.test(k));
  if (parameter !== undefined) throw refusal(`the ${JSON.stringify(parameter)} parameter`, '_method');
}

/** How a body carries its fields, for the frameworks that read `_method` from it. */
export type FieldedBody = 'form' | 'multipart' | 'json';

/**
 * Whether a request's body could carry a `_method` field some framework honours, and in which
 * form: only a POST's (Rack, Symfony, Laravel and Express's method-override act on POST alone), as
 * a form (Rack also takes a POST without a Content-Type as one), multipart, or JSON (Express's
 * method-override reading `req.body._method`). `contentTypes`: every Content-Type the request
 * carries (Node keeps the first; an upstream may read another).
 */
export function fieldedBody(method: string, contentTypes: readonly string[]): FieldedBody | undefined {
  if (method !== 'POST') return undefined;
  if (contentTypes.length > 1) {
    throw new TollgateError('bad_request', 'the request has more than one Content-Type header; send one', {
      field: 'content-type',
    });
  }
  const media = (contentTypes[0] ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
  if (media === '' || media === 'application/x-www-form-urlencoded') return 'form';
  if (media.startsWith('multipart/')) return 'multipart';
  if (media === 'application/json' || media.endsWith('+json')) return 'json';
  return undefined;
}

/** Refuses a body (read whole, in the form `fieldedBody` gave) with a field that overrides the method. */
export function refuseOverrideInBody(form: FieldedBody, body: Buffer): void {
  const found =
    form === 'form' ? formField(body) : form === 'multipart' ? multipartField(body) : jsonField(body);
  if (found !== undefined) throw refusal(`the body's ${JSON.stringify(found)} field`, '_method');
}

function formField(body: Buffer): string | undefined {
  return [...new URLSearchParams(body.toString('utf8')).keys()].find((k) => OVERRIDE_NAME.test(k));
}

const DISPOSITION = /^[ \t]*content-disposition[ \t]*:(.*)$/i;
const NAME_PARAMETER = /(?:^|;)\s*name(\*?)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/gi;

/**
 * Every part's name, from every Content-Disposition line of the body, wherever it stands: a
 * parser laxer than a strict one (another line ending, a boundary off by a byte) still finds the
 * part, so this looks at more than any of them would. A file's content that happens to hold such
 * a line is refused too; it would be a strange file.
 */
function multipartField(body: Buffer): string | undefined {
  for (const line of body.toString('latin1').split(/\r\n|\r|\n/)) {
    const disposition = DISPOSITION.exec(line);
    if (disposition === null) continue;
    for (const m of (disposition[1] ?? '').matchAll(NAME_PARAMETER)) {
      const quoted = m[2]?.replace(/\\(.)/g, '$1');
      const raw = (quoted ?? m[3] ?? '').trim();
      // RFC 5987's `name*=utf-8''%5Fmethod`, and names some parsers percent-decode.
      const extended = m[1] === '*' ? raw.replace(/^[^']*'[^']*'/, '') : raw;
      const names = [raw, extended, percentDecoded(extended)];
      const name = names.find((n) => n !== undefined && OVERRIDE_NAME.test(n));
      if (name !== undefined) return name;
    }
  }
  return undefined;
}

function percentDecoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

function jsonField(body: Buffer): string | undefined {
  const text = body.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON to this parser: a laxer one (comments, trailing commas) might still read a field,
    // so any mention of one is refused.
    return /(?:_|\\u005f)method/i.exec(text)?.[0];
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  return Object.keys(parsed).find((k) => OVERRIDE_NAME.test(k));
}
