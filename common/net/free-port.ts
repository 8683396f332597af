import { createServer } from 'node:net';

/**
 * A TCP port that was free on `host` a moment ago (the OS picks it). Local MLServer runtimes, the
 * demo, the benchmarks and the test harness all start servers on ports found this way.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('could not read the port the OS picked'));
        return;
      }
      srv.close(() => resolvePort(addr.port));
    });
  });
}
