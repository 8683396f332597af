import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Runs `fn` once when a call ends, however it ends: its response closes, or its connection does
 * first. A pipelined request still waiting its turn when its connection goes is dropped by Node
 * without its response ever closing, so the response's `close` alone would keep what the call
 * holds (its share of calls) for ever.
 */
export function onCallEnd(req: IncomingMessage, res: ServerResponse, fn: () => void): void {
  // Node detaches the socket from a request once its answer is sent: the one it came on is kept
  // (none: an in-process request, whose response's close is all there is).
  const socket = req.socket as IncomingMessage['socket'] | null | undefined;
  let done = false;
  const end = (): void => {
    if (done) return;
    done = true;
    socket?.off('close', end);
    fn();
  };
  // Its caller went already: nothing is held for it.
  if (res.closed || socket?.destroyed === true) {
    end();
    return;
  }
  res.once('close', end);
  socket?.once('close', end);
}
