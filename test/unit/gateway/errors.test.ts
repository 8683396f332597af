import { TollgateError } from '../../../common/errors.js';
import { errorHeaders, rawErrorResponse, toTollgateError } from '../../../gateway/http/errors.js';

describe('gateway error mapping', () => {
  it('every 401 says how to authenticate, unless the error names its own scheme', () => {
    expect(errorHeaders(new TollgateError(401, 'unknown_api_key', 'x'))['www-authenticate']).toBe('Apikey');
    const bearer = new TollgateError(401, 'invalid_token', 'x', {
      headers: { 'WWW-Authenticate': 'Bearer realm="t"' },
    });
    expect(errorHeaders(bearer)['www-authenticate']).toBe('Bearer realm="t"');
    expect(errorHeaders(new TollgateError(403, 'module_mismatch', 'x'))['www-authenticate']).toBeUndefined();
  });

  it('every 429 says when to come back', () => {
    expect(errorHeaders(new TollgateError(429, 'rate_limited', 'x'))['retry-after']).toBe('1');
    const told = new TollgateError(429, 'rate_limited', 'x', { headers: { 'Retry-After': '42' } });
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
      new TollgateError(431, 'headers_too_large', 'too big'),
      'Request Header Fields Too Large',
    );
    const [head, body] = text.split('\r\n\r\n');
    expect(head?.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(head).toContain(`content-length: ${Buffer.byteLength(body ?? '')}`);
    expect(head).toContain('connection: close');
    expect(JSON.parse(body ?? '')).toEqual({ error: 'too big', code: 'headers_too_large' });
  });
});
