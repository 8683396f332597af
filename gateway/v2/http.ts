import type { IncomingMessage, ServerResponse } from 'node:http';
import { TollgateError } from '../../common/errors.js';
import { refuseEncodedBody } from '../http/content-encoding.js';

/** What the V2 endpoints share on the wire: their refusals, JSON answers and body checks. */

export function methodNotAllowed(allowed: string): TollgateError {
  return new TollgateError('method_not_allowed', `use ${allowed} on this endpoint`, {
    headers: { allow: allowed },
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/**
 * A body declared as anything but JSON is refused before it is read: `curl -d` sends a form type,
 * which MLServer would answer with a pydantic message about dictionaries. No Content-Type at all
 * is accepted, since tritonclient sends its JSON requests without one; a binary-extension body
 * may also say it is bytes.
 */
export function checkContentType(req: IncomingMessage, binary = false): void {
  refuseEncodedBody(req);
  const declared = req.headers['content-type'];
  if (declared === undefined) return;
  const type = declared.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || /^application\/[a-z0-9.+-]*\+json$/.test(type)) return;
  if (binary && type === 'application/octet-stream') return;
  throw new TollgateError(
    'unsupported_media_type',
    `the body is declared as ${JSON.stringify(type)}; send the V2 request as JSON with Content-Type: application/json (curl: -H 'Content-Type: application/json')`,
    { field: 'content-type' },
  );
}

/**
 * Reads at most `limit` bytes of a runtime's answer; `over`: there was more. Past the limit the
 * answer is dropped with its connection rather than drained: a runtime runs its model's code, and
 * an answer that never ends would hold the call (and the gateway's time) for as long as it flows.
 */
export async function readLimited(
  body: AsyncIterable<Buffer>,
  limit: number,
): Promise<{ bytes: Buffer; over: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    // Leaving the loop destroys the body, and undici closes its socket.
    if (size > limit) break;
  }
  return { bytes: Buffer.concat(chunks).subarray(0, limit), over: size > limit };
}
