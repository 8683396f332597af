import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import { TollgateError } from '../../common/errors.js';
import { bodyTooLarge, sendError } from '../http/errors.js';
import { clientResponseHeaderList } from './headers.js';
import { BEFORE_CONNECTION } from './send-again.js';
import { interimPastDeadline, upstreamFailure } from './upstream-errors.js';
import { UpstreamSpan } from '../tracing/upstream-span.js';

/**
 * Streams one request to an upstream and its response back, both ways without buffering and
 * with backpressure: a slow client pauses the upstream read, a slow upstream pauses the client's
 * upload (undici pulls the request stream). Resolves with the status the client got (0 when the
 * client went away first).
 */
export function forward(
  req: IncomingMessage,
  res: ServerResponse,
  pool: Pool,
  /** The upstream's origin, as the pool was asked for by it (its span names it). */
  origin: string,
  path: string,
  headers: string[],
  requestId: string,
  limits: ForwardLimits,
  /** The body, when it was read whole to be checked first; else it streams from `req`. */
  read?: Buffer,
): Promise<number> {
  const { bodyLimitBytes, upstreamTimeoutMs } = limits;
  return new Promise<number>((resolve) => {
    let body: Readable | Buffer | null = null;
    let bodyError: TollgateError | undefined;
    const declared = req.headers['content-length'];
    if (read !== undefined) {
      if (read.length > 0) body = read;
    } else if (declared !== undefined) {
      // Node has already refused a malformed Content-Length, and will not read past it.
      if (Number(declared) > bodyLimitBytes) {
        res.setHeader('x-request-id', requestId);
        resolve(sendError(res, bodyTooLarge(bodyLimitBytes)).status);
        return;
      }
      if (declared !== '0') body = req;
    } else if (req.headers['transfer-encoding'] !== undefined) {
      body = Readable.from(
        limited(req, bodyLimitBytes, (err) => {
          bodyError = err;
        }),
        { objectMode: false },
      );
    }

    // Made once the request will be sent: a body refused on its length sends none.
    const span = UpstreamSpan.start(req.method ?? 'GET', origin, path);
    const sent = span === undefined ? headers : span.headers(headers);
    let abort: ((err: Error) => void) | undefined;
    let status = 0;
    const onClientClose = (): void => {
      if (!res.writableFinished) abort?.(new Error('the client closed the connection'));
    };
    res.once('close', onClientClose);

    // undici's core handler protocol (the newer controller API is a wrapper over it that would
    // parse every response's headers into an object we only turn back into a list).
    const handler: Dispatcher.DispatchHandler = {
      onConnect(abortRequest) {
        abort = abortRequest;
        if (res.destroyed) abortRequest(new Error('the client closed the connection'));
      },
      onHeaders(statusCode, rawHeaders, resume) {
        if (statusCode < 200) {
          // 1xx: Node answers Expect itself. undici restarts its head timer on each one, so an
          // upstream sending them could hold the call for ever: the first starts a deadline, and
          // one past it ends the call.
          const now = performance.now();
          interimSince ??= now;
          if (now - interimSince > upstreamTimeoutMs) abort?.(interimPastDeadline());
          return true;
        }
        try {
          res.writeHead(statusCode, clientResponseHeaderList(rawHeaders, requestId));
        } catch (err) {
          // A head Node will not write (a header it finds invalid): a bad answer, never a throw
          // back into undici (above).
          abort?.(
            new TollgateError(
              'upstream_connection_failed',
              `the upstream service's answer could not be passed on: ${(err as Error).message}`,
            ),
          );
          return false;
        }
        status = statusCode;
        span?.answered(statusCode);
        onDrain = resume;
        return true;
      },
      onData(chunk) {
        if (res.write(chunk)) return true;
        res.once('drain', () => onDrain?.());
        return false;
      },
      onComplete() {
        span?.end();
        res.off('close', onClientClose);
        res.end();
        resolve(status);
      },
      onError(err) {
        if (!tried && neverSent(err, body, status)) {
          // No connection was made and not a byte of the body read (or all of it is in hand): safe
          // for any method to try once more, after a moment (a name or a route that hiccuped while
          // the cluster moved).
          tried = true;
          setTimeout(dispatch, RETRY_PAUSE_MS);
          return;
        }
        const code = (err as { code?: unknown }).code;
        span?.end(typeof code === 'string' ? code : 'upstream_failed');
        res.off('close', onClientClose);
        if (res.destroyed) {
          resolve(0);
          return;
        }
        if (bodyError !== undefined) req.resume();
        // Cut off after its head was passed on (a dropped connection, a pause past the body
        // timeout): the client's answer can only be cut off too. Nothing here may throw: undici
        // would re-emit it where no one listens, and the process would end for every caller.
        if (!res.headersSent) res.setHeader('x-request-id', requestId);
        resolve(sendError(res, bodyError ?? upstreamFailure(err)).status);
      },
    };
    let onDrain: (() => void) | undefined;
    let tried = false;
    let interimSince: number | undefined;
    const dispatch = (): void => {
      if (res.destroyed) {
        span?.end('client_closed');
        return resolve(0);
      }
      pool.dispatch({ path, method: req.method as Dispatcher.HttpMethod, headers: sent, body }, handler);
    };
    dispatch();
  });
}

export interface ForwardLimits {
  bodyLimitBytes: number;
  /** How long an upstream may take to start its answer (undici's own timers; the 1xx deadline here). */
  upstreamTimeoutMs: number;
}

const RETRY_PAUSE_MS = 100;

function neverSent(err: Error, body: Readable | Buffer | null, status: number): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    status === 0 &&
    typeof code === 'string' &&
    BEFORE_CONNECTION.has(code) &&
    (body === null || Buffer.isBuffer(body) || !body.readableDidRead)
  );
}

/** Passes the body through, counting; past the limit it records the 413 and stops the stream. */
async function* limited(
  req: IncomingMessage,
  limit: number,
  onExceeded: (err: TollgateError) => void,
): AsyncGenerator<Buffer> {
  let seen = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    seen += chunk.length;
    if (seen > limit) {
      const err = bodyTooLarge(limit);
      onExceeded(err);
      throw err;
    }
    yield chunk;
  }
}
