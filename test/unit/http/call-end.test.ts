import { describe, expect, it } from '@jest/globals';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCallEnd } from '../../../gateway/http/call-end.js';

/** A loopback server whose handler registers three things a call holds, then answers (or not). */
async function serve(
  answer: boolean,
): Promise<{ port: number; seen: string[]; listeners: number[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const listeners: number[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const before = req.socket.listenerCount('close');
    for (const what of ['busy', 'address', 'owner']) onCallEnd(req, res, () => seen.push(what));
    // One listener on the connection for all three, whatever the call holds.
    listeners.push(req.socket.listenerCount('close') - before);
    if (answer) res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    listeners,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('what a call holds is given back when it ends', () => {
  it('once each, when its answer is sent, with one listener on its connection for all of them', async () => {
    const s = await serve(true);
    try {
      await new Promise<void>((resolve, reject) => {
        request({ port: s.port, host: '127.0.0.1', path: '/' }, (res) => {
          res.resume();
          res.on('end', resolve);
        })
          .on('error', reject)
          .end();
      });
      await new Promise((r) => setImmediate(r));
      expect(s.seen).toEqual(['busy', 'address', 'owner']);
      expect(s.listeners).toEqual([1]);
    } finally {
      await s.close();
    }
  });

  it('when its client goes before any answer', async () => {
    const s = await serve(false);
    try {
      const req = request({ port: s.port, host: '127.0.0.1', path: '/' });
      req.on('error', () => undefined);
      req.end();
      await new Promise<void>((resolve) => {
        const poll = (): void => (s.listeners.length > 0 ? resolve() : void setTimeout(poll, 5));
        poll();
      });
      expect(s.seen).toEqual([]);
      req.destroy();
      await new Promise<void>((resolve) => {
        const poll = (): void => (s.seen.length === 3 ? resolve() : void setTimeout(poll, 5));
        poll();
      });
      expect(s.seen).toEqual(['busy', 'address', 'owner']);
    } finally {
      await s.close();
    }
  });
});
