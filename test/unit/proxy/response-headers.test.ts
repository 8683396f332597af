import { clientResponseHeaders } from '../../../gateway/proxy/headers.js';

describe('the headers of a runtime’s answer, as the client gets them', () => {
  it('drop hop-by-hop headers and the runtime’s own x-request-id (the gateway’s is the one)', () => {
    const headers = clientResponseHeaders({
      'content-type': 'application/json',
      'x-request-id': 'runtime-made-this',
      connection: 'keep-alive, x-private',
      'keep-alive': 'timeout=5',
      'x-private': 'secret',
      'x-model-header': 'kept',
    });
    expect(headers).toEqual({ 'content-type': 'application/json', 'x-model-header': 'kept' });
  });
});
