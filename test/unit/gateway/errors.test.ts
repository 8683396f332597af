import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { TollgateError } from '../../../common/errors.js';
import { errorHeaders, rawErrorResponse, sendError, toTollgateError } from '../../../gateway/http/errors.js';

/** A logger whose lines are kept, to read back their level and code. */
function capturingLogger() {
  const lines: Array<{ level: number; code?: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; code?: string });
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines };
}
const answer = () => new ServerResponse(new IncomingMessage(new Socket()));
const WARN = 40;
const ERROR = 50;
const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('gateway error mapping', () => {
  it('every 401 says how to authenticate, unless the error names its own scheme', () => {
    expect(errorHeaders(new TollgateError('unknown_api_key', 'x'))['www-authenticate']).toBe('Apikey');
    const bearer = new TollgateError('invalid_token', 'x', {
      headers: { 'WWW-Authenticate': 'Bearer realm="t"' },
    });
    expect(errorHeaders(bearer)['www-authenticate']).toBe('Bearer realm="t"');
    expect(errorHeaders(new TollgateError('module_mismatch', 'x'))['www-authenticate']).toBeUndefined();
  });

  it('every 429 says when to come back', () => {
    expect(errorHeaders(new TollgateError('rate_limited', 'x'))['retry-after']).toBe('1');
    const told = new TollgateError('rate_limited', 'x', { headers: { 'Retry-After': '42' } });
    expect(errorHeaders(told)['retry-after']).toBe('42');
  });

  it('unknown failures become an opaque 500 that keeps the cause for the log', () => {
    const cause = new Error('secret detail');
    const err = toTollgateError(cause);
    expect(err.toJSON()).toEqual({
      error: 'the gateway failed unexpectedly; see its logs',
      code: 'internal_error',
    });
    expect(err.status).toBe(500);
    expect(err.cause).toBe(cause);
  });

  it('maps body parser failures', () => {
    expect(toTollgateError({ type: 'entity.too.large' }).status).toBe(413);
    expect(toTollgateError({ type: 'entity.parse.failed' }).code).toBe('invalid_json');
  });

  it('writes a complete HTTP/1.1 answer for socket-level errors', () => {
    const text = rawErrorResponse(
      new TollgateError('headers_too_large', 'too big'),
      'Request Header Fields Too Large',
    );
    const [head, body] = text.split('\r\n\r\n');
    expect(head?.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(head).toContain(`content-length: ${Buffer.byteLength(body ?? '')}`);
    expect(head).toContain('connection: close');
    expect(JSON.parse(body ?? '')).toEqual({ error: 'too big', code: 'headers_too_large' });
  });

  it('logs a model still loading as a warning, a Redis outage as an error, each at most once a second', async () => {
    const { log, lines } = capturingLogger();
    for (let i = 0; i < 3; i++) {
      sendError(answer(), new TollgateError('model_not_ready', 'loading'), log);
      sendError(answer(), new TollgateError('redis_unavailable', 'down'), log);
    }
    sendError(answer(), new TollgateError('model_not_found', 'no such model'), log);
    await flush();
    expect(lines.map((l) => [l.code, l.level])).toEqual([
      ['model_not_ready', WARN],
      ['redis_unavailable', ERROR],
    ]);
  });
});
