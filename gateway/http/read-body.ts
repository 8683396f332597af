import type { IncomingMessage } from 'node:http';
import { isTollgateError, type TollgateError } from '../../common/errors.js';
import { bodyTooLarge, clientGone, withClose } from './errors.js';

/** Whether a request says a body follows (Node has already refused a malformed Content-Length). */
export function carriesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Reads a request body that must be checked before it is sent on (V2 inference, a platform POST's
 * fields), refusing it as soon as it passes the gateway's body limit: at once from
 * Content-Length, else while reading.
 * `take`, when given, is asked for each chunk's bytes before it is kept, and its refusal ends the
 * read (the connection closes after the answer: the rest of the body is not read).
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  take?: (bytes: number) => TollgateError | undefined,
): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw bodyTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw bodyTooLarge(limit);
      const refused = take?.(chunk.length);
      if (refused !== undefined) throw withClose(refused);
      chunks.push(chunk);
    }
  } catch (err) {
    // A client gone mid-body is its own doing, not the gateway's failure (nor the model's).
    if (isTollgateError(err)) throw err;
    throw clientGone(err);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}
