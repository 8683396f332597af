/**
 * For context in bench/gateway.ts, not a product: how far a leaner HTTP layer on Node could go.
 * Node's own HTTP parser (llhttp, the one node:http runs) on raw `net` sockets on both sides, with
 * no IncomingMessage, ServerResponse, streams or undici: a bodiless GET in, a keep-alive upstream
 * connection from an idle list, the response head rewritten and written back with its body in one
 * `writev`. It checks nothing and handles only what the bench sends; the distance between it and
 * the bare node:http + undici proxy is what those layers cost per call.
 *
 * `process.binding('http_parser')` is deprecated and internal: fine for a measurement, and the
 * first thing a product built this way would have to replace.
 */
import net from 'node:net';
import { METHODS } from 'node:http';

process.noDeprecation = true;
const { HTTPParser } = process.binding('http_parser');

const upstreamPort = Number(new URL(process.env.UPSTREAM).port);
const idle = [];

function withUpstream(use) {
  const ready = idle.pop();
  if (ready !== undefined) return use(ready);
  const socket = net.connect(upstreamPort, '127.0.0.1');
  socket.setNoDelay(true);
  const parser = new HTTPParser();
  parser.initialize(HTTPParser.RESPONSE, {}, 0, 0);
  let head = null;
  parser[HTTPParser.kOnHeaders] = () => {};
  parser[HTTPParser.kOnHeadersComplete] = (_major, _minor, headers, _m, _u, status, message) => {
    head = `HTTP/1.1 ${status} ${message}\r\n`;
    for (let i = 0; i < headers.length; i += 2) {
      if (headers[i].toLowerCase() !== 'connection') head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    }
    head += '\r\n';
    return 0;
  };
  const flushHead = (client) => {
    if (head !== null) client.write(head);
    head = null;
  };
  parser[HTTPParser.kOnBody] = (chunk) => {
    const client = socket.client;
    client.cork();
    flushHead(client);
    client.write(chunk);
    client.uncork();
  };
  parser[HTTPParser.kOnMessageComplete] = () => {
    flushHead(socket.client);
    socket.client = null;
    idle.push(socket);
  };
  socket.on('data', (data) => {
    if (parser.execute(data) instanceof Error) socket.destroy();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    const at = idle.indexOf(socket);
    if (at >= 0) idle.splice(at, 1);
    socket.client?.destroy();
  });
  socket.once('connect', () => use(socket));
}

net
  .createServer((client) => {
    client.setNoDelay(true);
    const parser = new HTTPParser();
    parser.initialize(HTTPParser.REQUEST, {}, 0, 0);
    let request = null;
    parser[HTTPParser.kOnHeaders] = () => {};
    parser[HTTPParser.kOnHeadersComplete] = (_major, _minor, headers, method, url) => {
      request = `${METHODS[method]} ${url} HTTP/1.1\r\nhost: upstream\r\n`;
      for (let i = 0; i < headers.length; i += 2) {
        const name = headers[i].toLowerCase();
        if (name !== 'connection' && name !== 'host') request += `${headers[i]}: ${headers[i + 1]}\r\n`;
      }
      request += '\r\n';
      return 0;
    };
    parser[HTTPParser.kOnBody] = () => {};
    parser[HTTPParser.kOnMessageComplete] = () => {
      const head = request;
      withUpstream((upstream) => {
        upstream.client = client;
        upstream.write(head);
      });
    };
    client.on('data', (data) => {
      if (parser.execute(data) instanceof Error) client.destroy();
    });
    client.on('error', () => {});
  })
  .listen(Number(process.env.PORT), '127.0.0.1');
