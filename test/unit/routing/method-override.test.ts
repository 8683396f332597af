import { TollgateError } from '../../../common/errors.js';
import {
  fieldedBody,
  refuseMethodOverride,
  refuseOverrideInBody,
  type FieldedBody,
} from '../../../gateway/routing/method-override.js';

const refused = (run: () => void): TollgateError | undefined => {
  try {
    run();
    return undefined;
  } catch (err) {
    if (err instanceof TollgateError) return err;
    throw err;
  }
};

describe('which bodies can carry a method override', () => {
  it.each([
    ['POST', [], ['form']],
    ['POST', ['   '], ['form']],
    ['POST', ['application/x-www-form-urlencoded; charset=utf-8'], ['form']],
    ['POST', ['  Application/X-WWW-Form-Urlencoded'], ['form']],
    // Rack and PHP cut the type at "," or a space.
    ['POST', ['application/x-www-form-urlencoded,x'], ['form']],
    ['POST', ['application/x-www-form-urlencoded x'], ['form']],
    ['POST', ['multipart/form-data; boundary=x'], ['form', 'multipart']],
    ['POST', ['multipart/mixed; boundary=x'], ['multipart']],
    ['POST', ['application/json'], ['json']],
    ['POST', ['application/merge-patch+json'], ['json']],
    // Laravel takes a body as JSON when its type mentions json anywhere.
    ['POST', ['text/json'], ['json']],
    ['POST', ['text/plain; x=/json'], ['json']],
    ['POST', ['application/octet-stream'], []],
    ['POST', ['text/csv'], []],
    // Not JSON to body-parser nor Laravel: a stream of JSON lines.
    ['POST', ['application/x-ndjson'], []],
    // Only a POST stands for another method in the frameworks that read the field.
    ['PUT', ['application/x-www-form-urlencoded'], []],
    ['GET', [], []],
  ] as const)('%s with %j → %j', (method, types, forms) => {
    expect(fieldedBody(method, types, [])).toEqual(forms);
  });

  it('two Content-Types (Node reads the first, an upstream may read the other) → 400', () => {
    const err = refused(() =>
      fieldedBody('POST', ['application/octet-stream', 'application/x-www-form-urlencoded'], []),
    );
    expect(err?.code).toBe('bad_request');
    expect(err?.field).toBe('content-type');
    expect(err?.message).toMatch(/more than one Content-Type/);
  });

  it.each([
    [['application/json'], ['gzip'], 'content-encoding', /cannot read it as "gzip"; send it uncompressed/],
    [['application/x-www-form-urlencoded'], ['br'], 'content-encoding', /send it uncompressed/],
    // Every line and every token: an upstream may act on any of them.
    [['application/json'], ['identity', 'gzip'], 'content-encoding', /as "gzip"/],
    [['application/json'], ['identity, deflate'], 'content-encoding', /as "deflate"/],
    [['application/json; charset=utf-16le'], [], 'content-type', /charset "utf-16le"; send it as UTF-8/],
    [['application/x-www-form-urlencoded; charset="UTF-32"'], [], 'content-type', /charset "utf-32"/],
    // Parsers differ on which charset they take: each is read.
    [['application/json; xcharset=utf-8; charset=utf-16le'], [], 'content-type', /charset "utf-16le"/],
  ] as const)('a body it cannot read (%j, %s) → 415', (types, encoding, field, message) => {
    const err = refused(() => fieldedBody('POST', types, encoding));
    expect([err?.status, err?.code, err?.field]).toEqual([415, 'unsupported_media_type', field]);
    expect(err?.message).toMatch(message);
  });

  it('a body no check reads may be compressed, and one in UTF-8 or identity passes', () => {
    expect(fieldedBody('POST', ['application/octet-stream'], ['gzip'])).toEqual([]);
    expect(fieldedBody('POST', ['application/json; charset=UTF-8'], ['identity'])).toEqual(['json']);
  });
});

describe('a body that asks for another method is refused', () => {
  const multipart = (name: string, extra = ''): string =>
    `--b\r\nContent-Disposition: form-data; name="title"\r\n\r\nhello\r\n--b\r\n` +
    `Content-Disposition: form-data; ${name}${extra}\r\n\r\nDELETE\r\n--b--\r\n`;

  it.each([
    ['form', '_method=DELETE'],
    ['form', 'a=1&_METHOD=delete'],
    ['form', '%5Fmethod=DELETE'],
    ['form', '_%6Dethod=DELETE'],
    // PHP makes a leading ".", " " or "[" an "_", and drops leading spaces.
    ['form', '.method=DELETE'],
    ['form', '+_method=DELETE'],
    ['form', '%5Bmethod=DELETE'],
    ['form', '_method[]=DELETE'],
    // PHP cuts a name at NUL; Rack strips the brackets around one; qs reads [_method].
    ['form', '_method%00x=DELETE'],
    ['form', '%5B_method%5D=DELETE'],
    ['form', '_method%5D=DELETE'],
    ['form', '%5D_method=DELETE'],
    ['multipart', multipart('name="_method"')],
    ['multipart', multipart('name=_method')],
    ['multipart', multipart('name="_\\method"')],
    ['multipart', multipart(`name*=utf-8''%5Fmethod`)],
    ['multipart', multipart('name="%5Fmethod"')],
    ['multipart', multipart("name='_method'")],
    // Rack names a part without name= by its Content-ID.
    ['multipart', '--b\r\nContent-ID: <_method>\r\n\r\nDELETE\r\n--b--\r\n'],
    ['multipart', '--b\r\ncontent-id: _method\r\n\r\nDELETE\r\n--b--\r\n'],
    ['multipart', multipart('name=_method x')],
    // Rack searches a part's header block as a whole: any header, a folded line.
    ['multipart', '--b\r\nX-A: Content-Disposition: form-data; name="_method"\r\n\r\nDELETE\r\n--b--\r\n'],
    ['multipart', '--b\r\nContent-Disposition: form-data;\r\n name="_method"\r\n\r\nDELETE\r\n--b--\r\n'],
    // Bare LF line endings: a lax parser still finds the part.
    ['multipart', multipart('name="_method"').replaceAll('\r\n', '\n')],
    // RFC 2047 encoded-words, which Commons FileUpload (Tomcat, Spring) decodes.
    ['multipart', multipart('name="=?UTF-8?B?X21ldGhvZA==?="')],
    ['multipart', multipart('name="=?utf-8?q?=5Fmethod?="')],
    ['multipart', multipart('name="=?UTF-8?B?X21l?= =?UTF-8?B?dGhvZA==?="')],
    ['multipart', multipart('name="=?ISO-8859-1?Q?_method?="').replace('?Q?_', '?Q?=5F')],
    ['multipart', '--b\r\nContent-ID: <=?UTF-8?B?X21ldGhvZA==?=>\r\n\r\nDELETE\r\n--b--\r\n'],
    // RFC 2231 continuations: one name in pieces.
    ['multipart', multipart('name*0="_me"; name*1="thod"')],
    ['multipart', multipart(`name*0*=utf-8''%5Fme; name*1*=thod`)],
    // In their numbered order, however they come, and however the first is numbered.
    ['multipart', multipart('name*1="thod"; name*0="_me"')],
    ['multipart', multipart(`name*00*=UTF-8''%5Fme; name*01=thod`)],
    ['json', '{"title":"x","_method":"DELETE"}'],
    ['json', '{"\\u005fmethod":"DELETE"}'],
    ['json', '\uFEFF{"_method":"DELETE"}'],
  ] as Array<[FieldedBody, string]>)('%s: %j → 400 method_override', (form, body) => {
    const err = refused(() => refuseOverrideInBody([form], Buffer.from(body)));
    expect(err?.code).toBe('method_override');
    expect(err?.status).toBe(400);
    expect(err?.field).toBe('_method');
    expect(err?.message).toMatch(/send the call with the method you mean/);
  });

  it('a part named in a charset the check cannot read as the resource would is refused (UTF-16 spells _method in other bytes)', () => {
    const body = multipart('name="=?UTF-16BE?B?AF8AbQBlAHQAaABvAGQ=?="');
    const err = refused(() => refuseOverrideInBody(['multipart'], Buffer.from(body)));
    expect([err?.status, err?.code, err?.field]).toEqual([
      415,
      'unsupported_media_type',
      'content-disposition',
    ]);
    expect(err?.message).toMatch(/charset "UTF-16BE".*name parts in UTF-8/);
  });

  it.each([
    ['form', 'method=card&title=_method'],
    ['form', 'a_method=1&methods=2'],
    ['multipart', multipart('name="payment_method"')],
    ['multipart', multipart('name="=?UTF-8?B?cGF5bWVudF9tZXRob2Q=?="')],
    ['multipart', multipart('name*0="pay"; name*1="ment_method"')],
    [
      'multipart',
      '--b\r\nContent-Disposition: form-data; name="file"; filename="_method"\r\n\r\nx\r\n--b--\r\n',
    ],
    ['json', '{"method":"card","note":"_method"}'],
    ['json', '[{"_method":"DELETE"}]'],
    ['json', '"_method"'],
    ['json', '{"nested":{"_method":"DELETE"}}'],
    ['json', ''],
    ['json', '\uFEFF{"title":"x"}'],
  ] as Array<[FieldedBody, string]>)('%s: %j passes', (form, body) => {
    expect(refused(() => refuseOverrideInBody([form], Buffer.from(body)))).toBeUndefined();
  });
});

it.each([
  ['a trailing comma (a laxer parser reads the field)', '{"_\\u006dethod":"DELETE",}'],
  ['UTF-16 (a parser that sniffs the charset reads it)', Buffer.from('{"_method":"DELETE"}', 'utf16le')],
  ['not JSON at all', 'title=x'],
])('a JSON body that does not parse as UTF-8 JSON (%s) → 400 invalid_json', (_, body) => {
  const err = refused(() => refuseOverrideInBody(['json'], Buffer.from(body)));
  expect([err?.status, err?.code, err?.field]).toEqual([400, 'invalid_json', 'body']);
  expect(err?.message).toMatch(/send valid JSON/);
});

describe('headers and query', () => {
  it.each([
    '?_method=PUT',
    '?.method=PUT',
    '?%5Fmethod=PUT',
    '?x=1&_method%5B%5D=PUT',
    '?_method%00=PUT',
    '?[_method]=PUT',
  ])('%s → 400 method_override', (query) => {
    expect(refused(() => refuseMethodOverride({}, query))?.code).toBe('method_override');
  });

  it('a "method" parameter is not an override', () => {
    expect(refused(() => refuseMethodOverride({}, '?method=card&sort=_method'))).toBeUndefined();
  });

  it('an override header is named in the refusal', () => {
    expect(refused(() => refuseMethodOverride({ 'x-http-method': 'DELETE' }, ''))?.field).toBe(
      'x-http-method',
    );
  });
});
