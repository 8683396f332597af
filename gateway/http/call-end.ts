import type { IncomingMessage, ServerResponse } from 'node:http';

const ENDS = Symbol('tollgate.callEnds');

/** A response with what runs when its call ends: pending, or 'ended' once it has. */
type Tracked = ServerResponse & { [ENDS]?: Array<() => void> | 'ended' };

/**
 * Runs `fn` once when a call ends, however it ends: its response closes, or its connection does
 * first. A pipelined request still waiting its turn when its connection goes is dropped by Node
 * without its response ever closing, so the response's `close` alone would keep what the call
 * holds (its share of calls) for ever. However many things a call holds (its connection's busy
 * mark, its address's and its owner's shares), one pair of listeners serves them all.
 */
export function onCallEnd(req: IncomingMessage, res: ServerResponse, fn: () => void): void {
  const tracked = res as Tracked;
  const pending = tracked[ENDS];
  if (pending === 'ended') {
    fn();
    return;
  }
  if (pending !== undefined) {
    pending.push(fn);
    return;
  }
  // Node detaches the socket from a request once its answer is sent: the one it came on is kept
  // (none: an in-process request, whose response's close is all there is).
  const socket = req.socket as IncomingMessage['socket'] | null | undefined;
  // Its caller went already: nothing is held for it.
  if (res.closed || socket?.destroyed === true) {
    tracked[ENDS] = 'ended';
    fn();
    return;
  }
  const fns = [fn];
  tracked[ENDS] = fns;
  const end = (): void => {
    if (tracked[ENDS] === 'ended') return;
    tracked[ENDS] = 'ended';
    res.off('close', end);
    socket?.off('close', end);
    // Each is given back whatever another does: one that threw must not keep the rest held.
    for (const f of fns) {
      try {
        f();
      } catch {
        // Nothing to answer here; what it held is its own to report.
      }
    }
  };
  res.on('close', end);
  socket?.on('close', end);
}
