import type { IncomingMessage } from 'node:http';
import type { Hold } from '../http/held-memory.js';
import { readBody } from '../http/read-body.js';
import { checkContentType } from './http.js';

/** An inference request as the core reads it: JSON, or the binary extension's header and tensors. */
export interface InferRequestBytes {
  raw: Buffer;
  /** The binary extension's JSON header length (Inference-Header-Content-Length), if it is one. */
  binaryHeader: string | undefined;
}

/** Where an inference request's body comes from: REST's request stream, or a gRPC message already whole. */
export type InferBody = (held: Hold, limit: number) => Promise<InferRequestBytes>;

/**
 * A REST body, read bounded and held in the replica's budget: what it declares at once, the rest
 * as it comes. The binary tensor extension (tritonclient's default) is a JSON header and raw bytes.
 */
export function restBody(req: IncomingMessage): InferBody {
  return async (held, limit) => {
    const binaryHeader = headerValue(req.headers['inference-header-content-length']);
    checkContentType(req, binaryHeader !== undefined);
    const declared = Number(req.headers['content-length']);
    // Refused before a byte of the body is kept, when its length says it will not fit. The
    // connection stays: Node reads the rest of the body and drops it (no more than the limit), so
    // the client, still sending, reads the 429 instead of a reset, and may retry on it.
    if (Number.isSafeInteger(declared) && declared > 0 && declared <= limit) {
      const refused = held.reserve(declared);
      if (refused !== undefined) throw refused;
    }
    const raw = await readBody(req, limit, (bytes) => held.take(bytes));
    return { raw, binaryHeader };
  };
}

/** A header's one value (Node and undici give a repeated header as an array). */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}
