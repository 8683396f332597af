/**
 * The demo's sample platform resource: a small `datasets` REST service, kept in memory, as a data
 * platform's own service would be. The gateway sends it `/api/v1/datasets[/<id>]` with the caller's
 * grant (X-Tollgate-Key-Id, -Module, -Roles), never the key. Run: `tsx datasets.ts <port>`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { z } from 'zod';

const datasetSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9-]{1,40}$/, 'id: 1 to 40 lowercase letters, digits or -'),
  title: z.string().min(1).max(200),
  rows: z.number().int().min(0).default(0),
});
type Dataset = z.infer<typeof datasetSchema>;

const datasets = new Map<string, Dataset>([
  ['transactions-2026', { id: 'transactions-2026', title: 'Card transactions, 2026', rows: 184_203 }],
  ['customers', { id: 'customers', title: 'Customers (pseudonymised)', rows: 9_812 }],
]);

function send(res: ServerResponse, status: number, body: unknown, req: IncomingMessage): void {
  // The grant the gateway forwarded, so a caller can see what the service is told about them.
  const grant = { keyId: req.headers['x-tollgate-key-id'], roles: req.headers['x-tollgate-roles'] };
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(status < 300 ? { ...(body as object), grant } : body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 64 * 1024) throw new Error('body over 64 KiB');
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://datasets');
  const [api, v1, resource, id, ...rest] = url.pathname.split('/').filter(Boolean);
  if (api !== 'api' || v1 !== 'v1' || resource !== 'datasets' || rest.length > 0) {
    return send(res, 404, { error: `no such path ${url.pathname}`, code: 'not_found' }, req);
  }
  if (req.method === 'GET') {
    if (id === undefined) return send(res, 200, { items: [...datasets.values()] }, req);
    const found = datasets.get(id);
    return found
      ? send(res, 200, found, req)
      : send(res, 404, { error: `no dataset ${id}`, code: 'not_found' }, req);
  }
  if (req.method === 'POST' || req.method === 'PUT') {
    readJson(req).then(
      (raw) => {
        const parsed = datasetSchema.safeParse(id === undefined ? raw : { ...(raw as object), id });
        if (!parsed.success) {
          return send(res, 400, { error: parsed.error.issues[0]?.message, code: 'invalid_dataset' }, req);
        }
        const existed = datasets.has(parsed.data.id);
        datasets.set(parsed.data.id, parsed.data);
        send(res, existed ? 200 : 201, parsed.data, req);
      },
      (e: Error) => send(res, 400, { error: e.message, code: 'invalid_json' }, req),
    );
    return;
  }
  send(res, 405, { error: 'GET, POST or PUT', code: 'method_not_allowed' }, req);
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
