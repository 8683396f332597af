import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler } from 'express';
import { TollgateError, isTollgateError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { noteAnswerCode } from '../tracing/http-call.js';

/**
 * THE mapping from errors to HTTP answers, for the raw hot-path handlers and for Express alike.
 * Body: `{"error": "...", "code": "...", "field"?: "..."}`. A 401 always says how to authenticate
 * (`WWW-Authenticate: Apikey` unless the error names another scheme) and a 429 always says when
 * to come back (`Retry-After`).
 */

/** Turns anything thrown into a TollgateError; unknown failures become an opaque 500. */
export function toTollgateError(err: unknown): TollgateError {
  if (isTollgateError(err)) return err;
  // Express body parsers signal their own failures with `status` and `type`.
  if (typeof err === 'object' && err !== null && 'type' in err) {
    const type = (err as { type: unknown }).type;
    if (type === 'entity.too.large') {
      return new TollgateError('body_too_large', 'the request body is larger than the gateway accepts');
    }
    if (type === 'entity.parse.failed') {
      return new TollgateError('invalid_json', 'the request body is not valid JSON', { field: 'body' });
    }
    if (type === 'charset.unsupported') {
      return new TollgateError(
        'unsupported_media_type',
        'the request body must be JSON in UTF-8: send Content-Type: application/json (charset=utf-8 or none)',
      );
    }
    if (type === 'encoding.unsupported') {
      return new TollgateError(
        'unsupported_media_type',
        'the request body must be sent as it is or gzip-, deflate- or br-compressed (Content-Encoding)',
      );
    }
    if (type === 'request.aborted') {
      return clientGone();
    }
  }
  // Anything else the body parser refuses as the client's fault (a length that does not match, a
  // body that does not inflate: zlib's Z_ codes): the client's 400, not the gateway's 500. Only
  // the body parser's: another 4xx (a file not found) is no fault of the request's body.
  const parser =
    typeof err === 'object' &&
    err !== null &&
    ('type' in err || /^Z_/.test(String((err as { code?: unknown }).code ?? '')));
  if (parser && (err as { expose?: unknown }).expose === true) {
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const message = (err as { message?: unknown }).message;
      return new TollgateError(
        'bad_request',
        `the request body could not be read: ${typeof message === 'string' ? message : 'malformed'}`,
      );
    }
  }
  return new TollgateError('internal_error', 'the gateway failed unexpectedly; see its logs', {
    cause: err,
  });
}

/** A request body past the gateway's limit, whether streamed on (proxy) or read whole (V2). */
export const bodyTooLarge = (limit: number): TollgateError =>
  new TollgateError('body_too_large', `the request body exceeds the gateway's limit of ${limit} bytes`, {
    // The rest of an oversized upload is not worth reading: close the connection after answering.
    headers: { connection: 'close' },
  });

/** The same refusal, answered on a connection then closed: the rest of the body is not read. */
export const withClose = (err: TollgateError): TollgateError =>
  new TollgateError(err.code, err.message, { headers: { ...err.headers, connection: 'close' } });

/** A body cut short by its client: the client's doing, not the gateway's failure (nor the model's). */
export const clientGone = (cause?: unknown): TollgateError =>
  new TollgateError('bad_request', 'the client closed the connection before the body was sent', { cause });

/** Headers of the answer for an error, the defaults included. */
export function errorHeaders(err: TollgateError): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (err.status === 401) headers['www-authenticate'] = 'Apikey';
  if (err.status === 429) headers['retry-after'] = '1';
  for (const [name, value] of Object.entries(err.headers)) headers[name.toLowerCase()] = value;
  return headers;
}

/**
 * Server-side failures are logged, but at most once per code per second: an outage (Redis down,
 * an upstream gone) fails every request the same way, and a log line each would drown the logs.
 */
const LOG_INTERVAL_MS = 1_000;
/**
 * Expected, passing conditions: a model still loading, restarting or starting from zero answers
 * 503 until it is up.
 * Worth a warning, not an error (a Redis outage is an error: every checked call fails).
 */
const TRANSIENT_CODES = new Set(['model_not_ready', 'model_scaling_up']);
const lastLogged = new Map<string, { at: number; suppressed: number }>();

export function logFailure(log: Logger, err: TollgateError): void {
  const now = Date.now();
  const last = lastLogged.get(err.code);
  if (last !== undefined && now - last.at < LOG_INTERVAL_MS) {
    last.suppressed++;
    return;
  }
  const suppressed = last?.suppressed ?? 0;
  lastLogged.set(err.code, { at: now, suppressed: 0 });
  const level = TRANSIENT_CODES.has(err.code) ? 'warn' : 'error';
  log[level]({ err: err.cause ?? err, code: err.code, status: err.status, suppressed }, err.message);
}

/** Writes the error answer; if the response had already started, the only honest signal is a reset. */
export function sendError(res: ServerResponse, thrown: unknown, log?: Logger): TollgateError {
  const err = toTollgateError(thrown);
  noteAnswerCode(res, err.code);
  if (err.status >= 500 && log) logFailure(log, err);
  if (res.headersSent) {
    res.destroy(err);
    return err;
  }
  const body = JSON.stringify(err.toJSON());
  const headers = errorHeaders(err);
  headers['content-length'] = String(Buffer.byteLength(body));
  res.writeHead(err.status, headers);
  res.end(body);
  return err;
}

/**
 * The whole HTTP/1.1 answer as bytes, for errors found before Node built a request object (a
 * request head too large, a malformed request line): these go straight to the socket.
 */
export function rawErrorResponse(thrown: unknown, reason: string): string {
  const err = toTollgateError(thrown);
  const body = JSON.stringify(err.toJSON());
  const headers = errorHeaders(err);
  let head = `HTTP/1.1 ${err.status} ${reason}\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  head += `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  return head + body;
}

/** The Express error middleware: the same mapping. */
export function expressErrorHandler(log: Logger): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    sendError(res, err, log);
  };
}
