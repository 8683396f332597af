import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { refusal } from '../../harness/refusal.js';
import { readBody } from '../../../gateway/http/read-body.js';

/** A request body as a stream: what readBody reads, whoever sends it. */
const body = (headers: Record<string, string> = {}): PassThrough & { headers: Record<string, string> } =>
  Object.assign(new PassThrough(), { headers });

describe('reading a V2 body', () => {
  it('a client gone mid-body is a 400 of its own, never the gateway’s 500', async () => {
    const req = body();
    const read = refusal(readBody(req as unknown as IncomingMessage, 1024));
    req.write('{"inputs":');
    req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    const err = await read;
    expect([err.status, err.code, err.message]).toEqual([
      400,
      'bad_request',
      'the client closed the connection before the body was sent',
    ]);
  });

  it('past the limit: 413 at once from Content-Length, else while reading', async () => {
    const declared = await refusal(
      readBody(body({ 'content-length': '2048' }) as unknown as IncomingMessage, 1024),
    );
    expect(declared.code).toBe('body_too_large');
    const streamed = body();
    const read = refusal(readBody(streamed as unknown as IncomingMessage, 1024));
    streamed.end(Buffer.alloc(2048));
    expect((await read).code).toBe('body_too_large');
  });
});
