import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { z } from 'zod';

/**
 * The noisy neighbour of `make bench ARGS=fairness`, run as its own process from its own address:
 * it saturates one budget and holds it until killed. Input: one JSON argument (see Spec).
 * - `infer`: calls to its own models, `concurrency` at a time, as fast as they are answered;
 * - `keys`: each of its users makes a key and deletes it, over and over (each action an event for
 *   its webhook endpoints, which never answer);
 * - `slow-reports`: leak-report bodies sent in part from each of its addresses, never finished.
 */
const Spec = z.discriminatedUnion('mode', [
  z.object({
    mode: z.literal('infer'),
    port: z.number(),
    from: z.string(),
    paths: z.array(z.string()).min(1),
    key: z.string(),
    body: z.string(),
    concurrency: z.number().int().positive(),
  }),
  z.object({
    mode: z.literal('keys'),
    port: z.number(),
    from: z.string(),
    tokens: z.array(z.string()).min(1),
  }),
  z.object({
    mode: z.literal('slow-reports'),
    port: z.number(),
    from: z.array(z.string()).min(1),
    perAddress: z.number().int().positive(),
    bytes: z.number().int().positive(),
  }),
]);
type Spec = z.infer<typeof Spec>;

const spec = Spec.parse(JSON.parse(process.argv[2] ?? ''));

function call(
  agent: http.Agent,
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request({ agent, host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve(text));
      res.on('error', () => resolve(''));
    });
    req.on('error', () => resolve(''));
    req.end(body);
  });
}

async function infer(s: Extract<Spec, { mode: 'infer' }>): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, localAddress: s.from });
  const headers = { authorization: `Apikey ${s.key}`, 'content-type': 'application/json' };
  let n = 0;
  const loop = async (): Promise<never> => {
    for (;;) await call(agent, s.port, 'POST', s.paths[n++ % s.paths.length] ?? '', headers, s.body);
  };
  await Promise.all(Array.from({ length: s.concurrency }, loop));
}

async function keys(s: Extract<Spec, { mode: 'keys' }>): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, localAddress: s.from });
  const body = JSON.stringify({ module: 'platform', roles: ['models:inference'], name: 'churn' });
  const loop = async (token: string): Promise<never> => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    for (;;) {
      const made = await call(agent, s.port, 'POST', '/api/v1/apikeys', headers, body);
      const id = /"id":"([^"]+)"/.exec(made)?.[1];
      if (id === undefined) await new Promise((r) => setTimeout(r, 100));
      else await call(agent, s.port, 'DELETE', `/api/v1/apikeys/${id}`, headers);
    }
  };
  await Promise.all(s.tokens.map(loop));
}

function slowReports(s: Extract<Spec, { mode: 'slow-reports' }>): void {
  const held: Socket[] = [];
  for (const from of s.from)
    for (let i = 0; i < s.perAddress; i++) {
      const socket = connect({ port: s.port, host: '127.0.0.1', localAddress: from });
      socket.on('error', () => undefined);
      socket.write(
        'POST /api/v1/leaked-keys HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n' +
          'Github-Public-Key-Identifier: x\r\nGithub-Public-Key-Signature: eA==\r\n' +
          `Content-Length: ${s.bytes + 1000}\r\n\r\n[${' '.repeat(s.bytes - 1)}`,
      );
      held.push(socket);
    }
  setInterval(() => undefined, 1 << 30);
}

if (spec.mode === 'infer') await infer(spec);
else if (spec.mode === 'keys') await keys(spec);
else slowReports(spec);
