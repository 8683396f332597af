import type { IncomingHttpHeaders } from 'node:http';

/**
 * What the key check, the audit trail and the upstream headers read of a call: its method, target,
 * headers and peer. A REST request is one as it stands; the gRPC entry makes one of a call's
 * metadata (gateway/grpc/call-head.ts), so both reach the same checks without a request being
 * forged for either.
 */
export interface CallHead {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  /** Every header as sent, repeats included, as [name, value, ...]. */
  readonly rawHeaders: readonly string[];
  readonly socket: { readonly remoteAddress?: string | undefined };
}
