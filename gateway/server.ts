import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { TollgateError } from '../common/errors.js';
import { rawErrorResponse, sendError } from './http/errors.js';
import { normalisePath, type NormalisedPath } from './routing/normalise.js';
import type { GatewayServices } from './services.js';
import type { GrpcGateway } from './grpc/server.js';
import type { V2Context } from './v2/endpoint.js';
import { ConnectionGate } from './http/connection-gate.js';
import { carriesBody } from './http/read-body.js';
import { onCallEnd } from './http/call-end.js';
import { clientAddress, senderOf } from './http/client-address.js';
import { runAsCall } from '../common/tracing/call-trace.js';
import { traceHttpCall } from './tracing/http-call.js';
import { GRANT_HEADER } from './auth/signed-grant.js';

/**
 * A gateway's HTTP server (gateway/central-server.ts dispatches the central gateway's paths on it,
 * gateway/sidecar/ a sidecar's). Every path is normalised once, here, and a path that could cross
 * from one workflow, service or resource to another is refused before any handler sees it.
 */
export interface GatewayServer {
  server: Server;
  listen(port: number, host: string): Promise<AddressInfo>;
  /**
   * Also answers the Open Inference Protocol's gRPC service on `port` (gateway/grpc/), through the
   * placement's V2 core; resolves with the bound port. Refused where the placement serves no V2.
   */
  listenGrpc(port: number, host: string): Promise<number>;
  /** Stops accepting, lets in-flight requests finish (up to the configured time), then closes services. */
  shutdown(): Promise<void>;
}

/**
 * The HTTP shell both placements share (the central gateway in central-server.ts, the sidecar in
 * gateway/sidecar/): limits, the path normalised once and refused when it could cross from one
 * workflow, service or resource to another, errors before a request exists, the drain and the
 * graceful shutdown. `dispatch` gets every request whose path is sound; `v2`, the placement's V2
 * core, answers gRPC.
 */
export function createHttpServer(
  s: GatewayServices,
  dispatch: (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => void,
  v2?: V2Context,
): GatewayServer {
  const server = createServer(
    {
      maxHeaderSize: s.config.headerLimitBytes,
      keepAliveTimeout: 65_000,
      // Slowloris guards: Node bounds the head; the body is bounded per request below (Node's own
      // requestTimeout would answer in its format, and would also cut a slow upstream's answer).
      headersTimeout: s.config.requestHeadersTimeoutMs,
      requestTimeout: 0,
      // How often Node checks the head bound: its default (30 s) would make a 10 s bound 40 s.
      connectionsCheckingInterval: 1_000,
      // Node would answer a missing Host with an empty 400: checked below, answered as every error is.
      requireHostHeader: false,
    },
    (req, res) => {
      const socket = req.socket;
      gate.busy(socket);
      onCallEnd(req, res, () => gate.done(socket));
      // Draining: this answer is the connection's last, so its client reconnects elsewhere. Past
      // its address's keep-alive share, too: idle connections cannot pile up behind one address.
      if (draining || !gate.keepAlive(req.socket)) res.setHeader('connection', 'close');
      if (req.headers.host === undefined && req.httpVersion === '1.1') {
        res.setHeader('connection', 'close');
        s.metrics.request('none', sendError(res, missingHost(), s.log).status, 'none');
        req.resume();
        return;
      }
      boundBody(req, res, s);
      let path: NormalisedPath;
      try {
        path = normalisePath(req.url ?? '/');
      } catch (err) {
        s.metrics.request('none', sendError(res, err, s.log).status, 'none');
        return;
      }
      let release: () => void;
      try {
        release = s.calls.enterAddress(senderOf(clientAddress(req, s.proxies) ?? ''));
      } catch (err) {
        s.metrics.request('none', sendError(res, err, s.log).status, 'none');
        req.resume();
        return;
      }
      onCallEnd(req, res, release);
      const tracer = s.tracing?.tracer;
      if (tracer === undefined) {
        dispatch(req, res, path);
        return;
      }
      // A sidecar's call that carries a grant continues the central gateway's trace once the grant
      // is verified (sidecar.ts): its sampling is decided then.
      const parentLater = s.placement === 'sidecar' && typeof req.headers[GRANT_HEADER] === 'string';
      const call = traceHttpCall(tracer, req, res, path.segments, s.proxies, parentLater);
      if (call === undefined) {
        dispatch(req, res, path);
        return;
      }
      onCallEnd(req, res, () =>
        call.end(
          res.headersSent ? res.statusCode : undefined,
          res.writableFinished ? undefined : 'client_closed',
        ),
      );
      runAsCall(call, () => dispatch(req, res, path));
    },
  );

  // The gate keeps the bound (Node's own maxConnections would refuse before a newcomer could take
  // an idle connection's place).
  const gate = new ConnectionGate({
    max: s.config.maxConnections,
    keepAlivePerSender: s.config.keepAlivePerAddress,
    tracksCalls: true,
    unshared: (address) => s.proxies.hops > 0 && s.proxies.proxies.allows(address),
    refused: (why) => s.metrics.connectionRefused('http', why),
  });
  server.on('connection', (socket: Socket) => {
    if (!gate.admit(socket)) socket.destroy();
  });

  // An expectation other than 100-continue: Node would answer an empty 417.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('connection', 'close');
    const expect = JSON.stringify((req.headers.expect ?? '').slice(0, 40));
    const err = new TollgateError(
      'expectation_failed',
      `the gateway meets no expectation but 100-continue (Expect: ${expect}); send "Expect: 100-continue" or none`,
    );
    s.metrics.request('none', sendError(res, err, s.log).status, 'none');
    req.resume();
  });
  // CONNECT: not a forward proxy. Without a listener Node would drop the connection unanswered.
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    const err = new TollgateError(
      'method_not_allowed',
      'CONNECT is not served: the gateway is no forward proxy',
    );
    s.metrics.request('none', err.status, 'none');
    socket.on('error', () => socket.destroy());
    socket.end(rawErrorResponse(err, 'Method Not Allowed'));
  });

  // Errors found before a request exists (head too large, not HTTP) are answered on the socket.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      s.metrics.requestTimeout('headers');
      s.metrics.request('none', 408, 'none');
      if (socket.writable)
        socket.end(rawErrorResponse(headTimeout(s.config.requestHeadersTimeoutMs), 'Request Timeout'));
      else socket.destroy();
      return;
    }
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const answer = tooLarge
      ? new TollgateError(
          'headers_too_large',
          `the request headers exceed the gateway's limit of ${s.config.headerLimitBytes} bytes`,
        )
      : new TollgateError('bad_request', 'the request is not valid HTTP/1.1');
    s.metrics.request('none', answer.status, 'none');
    socket.end(rawErrorResponse(answer, tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'));
  });

  let draining = false;
  let shuttingDown: Promise<void> | undefined;
  let grpc: GrpcGateway | undefined;
  let grpcListener: NetServer | undefined;
  return {
    server,
    listenGrpc(port, host) {
      if (v2 === undefined)
        return Promise.reject(new Error('this placement serves no V2 inference, so no gRPC'));
      const core = v2;
      // The port is bound now and gRPC's libraries are loaded with its first connection: a model's
      // sidecar listens for gRPC in every pod, and those libraries are a sizeable part of a
      // process's memory (README, "The data plane's cost").
      let loading: Promise<GrpcGateway> | undefined;
      const gate = new ConnectionGate({
        max: s.config.grpcMaxConnections,
        refused: (why) => s.metrics.connectionRefused('grpc', why),
      });
      const accept = async (socket: Socket): Promise<void> => {
        socket.on('error', () => socket.destroy());
        if (!gate.admit(socket)) {
          socket.destroy();
          return;
        }
        loading ??= import('./grpc/server.js').then(({ GrpcGateway }) => {
          grpc = new GrpcGateway(core);
          return grpc;
        });
        try {
          const gateway = await loading;
          // Closed while loading: shutdown() has already shut down what it knew of. A client that
          // left meanwhile has nothing to hand over.
          if (grpcListener?.listening === true && !socket.destroyed) gateway.accept(socket);
          else socket.destroy();
        } catch (err) {
          // The next connection tries again.
          loading = undefined;
          s.log.error({ err }, 'the gRPC service could not be loaded');
          socket.destroy();
        }
      };
      const listener = createNetServer((socket) => void accept(socket));
      grpcListener = listener;
      return listenOn(listener, port, host).then(async (address) => {
        // Bound after shutdown began: it would keep the process alive.
        if (shuttingDown !== undefined) await closeListener(listener);
        return address.port;
      });
    },
    listen(port, host) {
      return listenOn(server, port, host);
    },
    shutdown() {
      shuttingDown ??= (async () => {
        draining = true;
        s.draining = true;
        if (s.config.shutdownDrainMs > 0) await sleep(s.config.shutdownDrainMs);
        await Promise.all([
          closeGracefully(server, s.config.shutdownTimeoutMs),
          grpcListener?.listening === true ? closeListener(grpcListener) : undefined,
          grpc?.shutdown(s.config.shutdownTimeoutMs),
        ]);
        await s.close();
      })();
      return shuttingDown;
    },
  };
}

export function listenOn(server: NetServer, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Resolves once the listener is closed and the connections it accepted have ended. */
function closeListener(server: NetServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

const headTimeout = (ms: number): TollgateError =>
  new TollgateError('request_timeout', `the request head did not arrive within ${ms} ms; send it at once`);

/**
 * Bounds the time to receive a request's body (requestBodyTimeoutMs): past it, the caller gets 408
 * request_timeout (unless an answer has begun), the connection is closed, and the upstream request
 * fed by that body is aborted with it.
 */
function boundBody(req: IncomingMessage, res: ServerResponse, s: GatewayServices): void {
  if (!carriesBody(req) || req.complete) return;
  const ms = s.config.requestBodyTimeoutMs;
  const timer = setTimeout(() => {
    if (req.complete) return;
    s.metrics.requestTimeout('body');
    // Destroyed with an error, so whatever reads the body (the upstream request) fails at once
    // instead of waiting for bytes that will not come.
    const cut = (): void => {
      req.destroy(new Error(`request body not received within ${ms} ms`));
    };
    if (res.headersSent) {
      cut();
      return;
    }
    const err = new TollgateError(
      'request_timeout',
      `the request body did not arrive within ${ms} ms; send it faster, or ask for a larger requestBodyTimeoutMs`,
      { headers: { connection: 'close' } },
    );
    res.once('finish', cut);
    sendError(res, err, s.log);
  }, ms);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
}

/**
 * Stops accepting connections and waits for in-flight requests. Idle keep-alive connections are
 * closed as soon as they become idle; past the deadline, whatever is left is cut.
 */
function closeGracefully(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 25);
    const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(deadline);
      resolve();
    });
    server.closeIdleConnections();
  });
}

const missingHost = (): TollgateError =>
  new TollgateError(
    'bad_request',
    'an HTTP/1.1 request needs a Host header; add "Host: <the gateway\'s name>"',
  );
