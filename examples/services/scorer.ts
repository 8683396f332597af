/**
 * The demo's sample workflow service: `scorer` of workflow `fraud`. It scores a transaction
 * (`POST /score {"amount": 120.5, "country": "FR"}`) with a toy rule and says which key's grant
 * reached it, to show that the gateway forwards the grant and never the key.
 * Run: `tsx scorer.ts <port>`.
 */
import { createServer } from 'node:http';
import { z } from 'zod';

const txSchema = z.object({ amount: z.number().nonnegative(), country: z.string().length(2) });

const server = createServer((req, res) => {
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const grant = { keyId: req.headers['x-tollgate-key-id'], roles: req.headers['x-tollgate-roles'] };
  const url = new URL(req.url ?? '/', 'http://scorer');
  if (req.method === 'GET' && url.pathname === '/health') return reply(200, { status: 'ok', grant });
  if (req.method !== 'POST' || url.pathname !== '/score') {
    return reply(404, { error: 'POST /score {"amount": number, "country": "XX"}', code: 'not_found' });
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let tx: z.infer<typeof txSchema>;
    try {
      tx = txSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch {
      return reply(400, { error: 'send {"amount": number, "country": "XX"}', code: 'invalid_transaction' });
    }
    const risk = Math.min(1, tx.amount / 10_000 + (tx.country === 'FR' ? 0 : 0.3));
    reply(200, { risk: Number(risk.toFixed(3)), flagged: risk > 0.5, grant });
  });
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
