/**
 * A steady stream of calls from a few concurrent clients, for "no call lost while X changes"
 * tests: every answer's status and label (e.g. the model version that answered) is counted.
 */
export interface LoadTally {
  total: number;
  /** Answers by status, e.g. { "200": 812 }. */
  byStatus: Record<string, number>;
  /** Successful answers by label (what `call` resolved with). */
  byLabel: Record<string, number>;
  /** The first few failures, for the assertion message. */
  failures: string[];
}

export interface SteadyLoad {
  /** The tally so far (a copy). */
  tally(): LoadTally;
  /** Labels of the successes since `mark()`, in order. */
  since(mark: number): string[];
  mark(): number;
  /**
   * Resolves (with the milliseconds it took) once the successes from now on hold every label of
   * `want` and the last `tail` of them hold no other; rejects after `timeoutMs`.
   */
  settles(want: string[], tail?: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<LoadTally>;
}

/** `call` resolves with the status and a label; it must not throw (a thrown error counts as status "error"). */
export function steadyLoad(
  call: () => Promise<{ status: number; label: string; detail?: string }>,
  concurrency = 4,
): SteadyLoad {
  const t: LoadTally = { total: 0, byStatus: {}, byLabel: {}, failures: [] };
  const labels: string[] = [];
  let running = true;
  const worker = async (): Promise<void> => {
    while (running) {
      let status: string;
      let label = '';
      let detail = '';
      try {
        const r = await call();
        status = String(r.status);
        label = r.label;
        detail = r.detail ?? '';
      } catch (err) {
        status = 'error';
        detail = (err as Error).message;
      }
      t.total += 1;
      t.byStatus[status] = (t.byStatus[status] ?? 0) + 1;
      if (status === '200') {
        t.byLabel[label] = (t.byLabel[label] ?? 0) + 1;
        labels.push(label);
      } else if (t.failures.length < 5) {
        t.failures.push(`${new Date().toISOString()} ${status} ${detail}`.slice(0, 300));
      }
    }
  };
  const workers = Array.from({ length: concurrency }, () => worker());
  const copy = (): LoadTally => structuredClone(t);
  return {
    tally: copy,
    mark: () => labels.length,
    since: (mark) => labels.slice(mark),
    settles: async (want, tail = 30, timeoutMs = 120_000) => {
      const mark = labels.length;
      const started = Date.now();
      for (;;) {
        const seen = labels.slice(mark);
        const last = seen.slice(-tail);
        if (seen.length >= tail && want.every((v) => seen.includes(v)) && last.every((v) => want.includes(v)))
          return Date.now() - started;
        if (Date.now() - started > timeoutMs)
          throw new Error(
            `answers did not settle on ${want.join(', ')} in ${timeoutMs / 1000} s: ${JSON.stringify(t)}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    stop: async () => {
      running = false;
      await Promise.all(workers);
      return copy();
    },
  };
}
