import type { IncomingMessage } from 'node:http';
import { TollgateError } from '../../../common/errors.js';
import { refuseEncodedBody } from '../../http/content-encoding.js';

/**
 * Reads a JSON request body on the raw (non-Express) path, refusing a wrong media type (415), a
 * body over `limit` bytes (413, as soon as it is known: from Content-Length or while streaming)
 * and text that is not JSON (400).
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new TollgateError(
      'unsupported_media_type',
      'send the model as JSON with "Content-Type: application/json"',
    );
  }
  refuseEncodedBody(req);
  const tooLarge = () =>
    new TollgateError('body_too_large', `the request body is larger than ${limit} bytes`, {
      field: 'body',
    });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw tooLarge();
  }
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // Keep reading (and dropping) the rest, so the answer can still be written on this socket.
      req.off('data', onData);
      req.resume();
      reject(tooLarge());
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
  try {
    return JSON.parse(text);
  } catch {
    throw new TollgateError('invalid_json', 'the request body is not valid JSON', { field: 'body' });
  }
}
