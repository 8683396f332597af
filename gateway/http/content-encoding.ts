import type { IncomingMessage } from 'node:http';
import { TollgateError } from '../../common/errors.js';

/**
 * Refuses a request body sent compressed where the gateway reads it to check it (V2 inference, a
 * Model): read as it is, it would be "not JSON", which says nothing of what to fix.
 */
export function refuseEncodedBody(req: IncomingMessage): void {
  const coding = req.headers['content-encoding']?.trim().toLowerCase();
  if (coding === undefined || coding === '' || coding === 'identity') return;
  throw new TollgateError(
    'unsupported_media_type',
    `the body is sent with Content-Encoding: ${JSON.stringify(coding.slice(0, 40))}; send it uncompressed, as the gateway checks it before it goes on`,
    { field: 'content-encoding' },
  );
}
