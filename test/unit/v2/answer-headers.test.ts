import { runtimeAnswerHeaders } from '../../../gateway/v2/answer-headers.js';

describe('the headers of a runtime’s answer, as a V2 caller gets them', () => {
  it('only what describes the body: never the runtime’s cookies, HSTS, links, hop-by-hop headers or x-request-id', () => {
    const headers = runtimeAnswerHeaders({
      'content-type': 'application/json',
      'content-length': '42',
      'content-encoding': 'gzip',
      'inference-header-content-length': '17',
      'x-request-id': 'runtime-made-this',
      connection: 'keep-alive, x-private',
      'keep-alive': 'timeout=5',
      'x-private': 'secret',
      'set-cookie': ['session=stolen; Domain=example.test'],
      'strict-transport-security': 'max-age=31536000; includeSubDomains',
      'clear-site-data': '"*"',
      link: '</evil.js>; rel=preload',
      refresh: '0; url=https://evil.test',
    });
    expect(headers).toEqual({
      'content-type': 'application/json',
      'content-length': '42',
      'content-encoding': 'gzip',
      'inference-header-content-length': '17',
      'x-content-type-options': 'nosniff',
    });
  });
});
