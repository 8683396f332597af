import { decoded } from '../answer-decoding.js';

/**
 * One logged inference call, as a line of a model's payload log: what was asked and answered,
 * refusals and runtime errors included, with the fields the Model names redacted. The key itself
 * is never here, only its id.
 */
export interface PayloadRecord {
  time: string;
  model: string;
  /** The version that answered; null for a model without versions. */
  version: string | null;
  requestId: string;
  /** The call's trace (W3C trace id), when tracing is on. */
  traceId?: string;
  keyId: string;
  status: number;
  /** The error code of a refusal or failure; null on success. */
  code: string | null;
  latencyMs: number;
  /** The request body (V2 JSON; a binary request as the gateway translated it); null if unread. */
  request: unknown;
  /** The answer: the runtime's JSON, or `{error, code}` as the caller got it. */
  response: unknown;
  /**
   * A shadow version's answer to a copy of the call (spec.shadow), never returned: the version
   * that answered the caller, and whether the two answers agree.
   */
  shadowOf?: { version: string | null; agreed: boolean };
}

export const REDACTED = '[redacted]';
/** What stands for a value nested past `MAX_DEPTH`: never walked, so never logged as it is. */
export const TOO_DEEP = '[too deep]';

/** Deeper than any V2 body: what lies below is replaced, not walked. */
const MAX_DEPTH = 32;

/**
 * The value with the named fields redacted: any property of that name, and the `data` of any
 * tensor (an object with `name` and `data`, as V2 inputs and outputs are) of that name. Anything
 * nested deeper than a V2 body ever is stands as `TOO_DEEP`: a name below it could not be
 * redacted, and JSON.stringify of a deep enough value throws.
 */
export function redact(value: unknown, names: ReadonlySet<string>, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return TOO_DEEP;
  if (Array.isArray(value)) return value.map((v) => redact(v, names, depth + 1));
  const object = value as Record<string, unknown>;
  const tensor = typeof object['name'] === 'string' && names.has(object['name']);
  return Object.fromEntries(
    Object.entries(object).map(([k, v]) => [
      k,
      names.has(k) || (tensor && k === 'data') ? REDACTED : redact(v, names, depth + 1),
    ]),
  );
}

/**
 * A body as the log keeps it: its JSON, redacted; past `maxBytes`, only its size (a log line must
 * stay small, and a large tensor is rarely what a data team queries). A compressed answer is read
 * as the caller reads it. A body that is not JSON (a runtime's plain-text error, a binary request
 * refused before it was decoded) is kept as text only where nothing is to be redacted: a named
 * field in it could not be found.
 */
export function loggedBody(
  body: string | Buffer | number | undefined,
  maxBytes: number,
  names: ReadonlySet<string>,
  encoding?: string,
): unknown {
  if (body === undefined) return null;
  // A number: the size of a body streamed past the limit, of which nothing was kept.
  if (typeof body === 'number') return { truncated: true, bytes: body };
  const encoded = typeof body === 'string' ? Buffer.from(body) : body;
  if (encoded.length > maxBytes) return { truncated: true, bytes: encoded.length };
  const raw = decoded(encoded, encoding, maxBytes);
  if (!Buffer.isBuffer(raw)) return raw;
  const text = raw.toString();
  try {
    return redact(JSON.parse(text) as unknown, names);
  } catch {
    return names.size === 0 ? { text } : { unparsed: true, bytes: raw.length };
  }
}

/**
 * The answer as the log keeps it: the runtime's, or the refusal as the caller got it. A refusal or
 * a runtime's error may quote the values it refused (the request checks preview the value at
 * fault; MLServer's errors quote up to 500 characters of it), and a field's name does not say where
 * in a message its value sits: for a model that redacts fields, a failed call keeps its code and
 * nothing of its message.
 */
export function loggedAnswer(
  outcome: { status: number | undefined; code: string | null; refusal?: { code: string; error: string } },
  body: string | Buffer | number | undefined,
  maxBytes: number,
  names: ReadonlySet<string>,
  encoding?: string,
): unknown {
  if (outcome.status !== 200 && names.size > 0) {
    return { code: outcome.refusal?.code ?? outcome.code, error: REDACTED };
  }
  return outcome.refusal ?? loggedBody(body, maxBytes, names, encoding);
}
