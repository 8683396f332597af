import { createServer as createHttpServer, get } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { createLogger } from '../../../common/logger.js';
import { guardIpv6, guardsAPod } from '../../../gateway/sidecar/ipv6-guard.js';

const log = createLogger('ipv6-guard-test', 'silent');

const listen = (server: Server, options: { port: number; host: string; ipv6Only?: boolean }) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options, () => resolve());
  });

describe('the sidecar’s guard on every IPv6 address', () => {
  it('answers on [::1] through the same server, and a workload can no longer take [::] on that port', async () => {
    const http = createHttpServer((_req, res) => res.end('sidecar'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const port = (http.address() as AddressInfo).port;
    const v6 = await guardIpv6((socket) => http.emit('connection', socket), port, log);
    try {
      expect(v6).toBeDefined();
      const body = await new Promise<string>((resolve, reject) =>
        get({ host: '::1', port, path: '/' }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        }).on('error', reject),
      );
      expect(body).toBe('sidecar');
      // A workload that listens on the IPv6 wildcard fails to start, as on 0.0.0.0.
      await expect(listen(createServer(), { port, host: '::', ipv6Only: true })).rejects.toMatchObject({
        code: 'EADDRINUSE',
      });
      await expect(listen(createServer(), { port, host: '::' })).rejects.toMatchObject({
        code: 'EADDRINUSE',
      });
    } finally {
      v6?.close();
      http.close();
    }
  });

  it('refuses to start beside a workload that took [::] first, saying what to change', async () => {
    const workload = createServer();
    await listen(workload, { port: 0, host: '::', ipv6Only: true });
    const port = (workload.address() as AddressInfo).port;
    const http = createHttpServer();
    try {
      await expect(guardIpv6((socket) => http.emit('connection', socket), port, log)).rejects.toThrow(
        `port ${port} is taken on every IPv6 address ([::]:${port})`,
      );
    } finally {
      workload.close();
    }
  });

  it('guards only in a pod: on its IPv4 address, not beside a local process on loopback', () => {
    expect(guardsAPod('10.200.0.7')).toBe(true);
    expect(guardsAPod('127.0.0.1')).toBe(false);
    expect(guardsAPod('0.0.0.0')).toBe(true);
    expect(guardsAPod('fd00::7')).toBe(false);
  });
});
