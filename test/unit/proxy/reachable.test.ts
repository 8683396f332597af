import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { reachable } from '../../../gateway/proxy/reachable.js';
import { freePort } from '../../../common/net/free-port.js';

describe('reachable', () => {
  it('is true for a listening port and false once it closes', async () => {
    const server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    expect(await reachable(`http://127.0.0.1:${port}`)).toBe(true);
    await new Promise((resolve) => server.close(resolve));
    expect(await reachable(`http://127.0.0.1:${port}`)).toBe(false);
  });

  it('is false, within its timeout, for a closed port, a name that does not resolve and a bad origin', async () => {
    const started = performance.now();
    expect(await reachable(`http://127.0.0.1:${await freePort()}`)).toBe(false);
    expect(await reachable('http://scaled-to-zero.invalid', 500)).toBe(false);
    expect(await reachable('not a url')).toBe(false);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('takes an IPv6 literal as URLs write it', async () => {
    const server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
    const { port } = server.address() as AddressInfo;
    expect(await reachable(`http://[::1]:${port}`)).toBe(true);
    await new Promise((resolve) => server.close(resolve));
  });
});
