import type { IncomingMessage } from 'node:http';
import { isTollgateError, TollgateError } from '../../common/errors.js';
import { bodyTooLarge } from '../http/errors.js';

/**
 * Reads a request body that must be checked before it is sent on (V2 inference), refusing it as
 * soon as it passes the gateway's body limit: at once from Content-Length, else while reading.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw bodyTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw bodyTooLarge(limit);
      chunks.push(chunk);
    }
  } catch (err) {
    // A client gone mid-body is its own doing, not the gateway's failure (nor the model's).
    if (isTollgateError(err)) throw err;
    throw new TollgateError('bad_request', 'the client closed the connection before the body was sent', {
      cause: err,
    });
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}
