import { setTimeout as sleep } from 'node:timers/promises';
import { logTail, type Managed } from './processes.js';

/**
 * Polls `check` until it returns true. Fails fast, with the log's tail, when the process it
 * waits for has already exited, instead of waiting out the whole timeout.
 */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; proc?: Managed; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError = '';
  for (;;) {
    if (opts.proc?.hasExited()) {
      throw new Error(
        `${what}: the process exited before it was ready. Log ${opts.proc.logFile}:\n${logTail(opts.proc.logFile)}`,
      );
    }
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      const log = opts.proc ? `\nLog ${opts.proc.logFile}:\n${logTail(opts.proc.logFile)}` : '';
      throw new Error(`${what}: not ready after ${opts.timeoutMs} ms (${lastError})${log}`);
    }
    await sleep(opts.intervalMs ?? 100);
  }
}

/** True when GET `url` answers 200. */
export async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  await res.body?.cancel();
  return res.status === 200;
}
