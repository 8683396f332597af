import type { CallHead } from '../http/call-head.js';
import type { Dispatcher } from 'undici';
import type { KeyGrant } from '../../common/resources/grant.js';
import { headersPerTry, withSignedGrant } from '../auth/signed-grant.js';
import { upstreamRequestHeaders } from '../proxy/headers.js';
import { sendAgainOnConnectionLoss } from '../proxy/send-again.js';
import type { RuntimeAddress } from '../routing/route-table.js';
import type { GatewayServices } from '../services.js';
import { runtimeUnreachable } from './runtime-errors.js';

/** One call to a model's runtime on behalf of a caller. */
export interface RuntimeCall {
  grant: KeyGrant;
  requestId: string;
  runtime: RuntimeAddress;
  /** The gateway reads the answer itself (a shadow's copy): asked uncompressed. */
  plain?: boolean;
}

export type RuntimeServices = Pick<GatewayServices, 'upstreams' | 'grantSigner' | 'proxies'>;

/**
 * The runtime side of a V2 call: the headers (the grant as always, signed for this one call when a
 * sidecar guards the runtime) and the requests, tried again where the runtime may safely see them
 * twice. The metadata the validator needs is fetched by the metadata cache.
 */
export class RuntimeClient {
  constructor(private readonly s: RuntimeServices) {}

  /** Whether the runtime says the model is ready: a refused connection is "not ready" now. */
  async ready(req: CallHead, call: RuntimeCall, model: string): Promise<boolean> {
    const path = `${call.runtime.basePath}/v2/models/${model}/ready`;
    try {
      const headers = await headersPerTry(() => this.headers(req, call, 'GET', path));
      // No pauses: a refused connection means not ready, not after the waits an inference takes.
      const answer = await sendAgainOnConnectionLoss(
        async () =>
          this.s.upstreams.request(call.runtime.origin, { method: 'GET', path, headers: await headers() }),
        [],
      );
      await answer.body.dump();
      return answer.statusCode === 200;
    } catch {
      return false;
    }
  }

  /**
   * Sends a checked inference request. `json`: the body was rewritten as JSON (from the binary
   * extension), so the client's length and framing headers no longer apply.
   */
  async infer(
    req: CallHead,
    call: RuntimeCall,
    model: string,
    query: string,
    body: Buffer | string,
    json: boolean,
  ): Promise<Dispatcher.ResponseData> {
    const path = `${call.runtime.basePath}/v2/models/${model}/infer${query}`;
    const headers = await headersPerTry(async () => {
      const sent = await this.headers(req, call, 'POST', path);
      const rewritten = json ? asJsonBody(sent) : sent;
      return call.plain === true ? uncompressed(rewritten) : rewritten;
    });
    try {
      // Inference changes nothing: a replica going away or a Service between endpoints is tried again.
      return await sendAgainOnConnectionLoss(async () =>
        this.s.upstreams.request(call.runtime.origin, {
          method: 'POST',
          path,
          headers: await headers(),
          body,
        }),
      );
    } catch (err) {
      throw runtimeUnreachable(model, err as Error);
    }
  }

  /** A try's headers: behind a sidecar, with the grant signed for this try (headersPerTry). */
  private headers(req: CallHead, call: RuntimeCall, method: string, target: string): Promise<string[]> {
    return withSignedGrant(
      this.s.grantSigner,
      upstreamRequestHeaders(req, call.grant, call.requestId, this.s.proxies),
      call.grant,
      call.runtime.grantAudience,
      { method, target },
    );
  }
}

/** Headers for a body the gateway rewrote as JSON: the client's length and binary framing no longer apply. */
function asJsonBody(headers: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = (headers[i] as string).toLowerCase();
    if (name === 'content-length' || name === 'content-type' || name === 'inference-header-content-length')
      continue;
    out.push(headers[i] as string, headers[i + 1] as string);
  }
  out.push('content-type', 'application/json');
  return out;
}

/** Headers asking for an answer the gateway can read as it comes. */
function uncompressed(headers: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    if ((headers[i] as string).toLowerCase() === 'accept-encoding') continue;
    out.push(headers[i] as string, headers[i + 1] as string);
  }
  out.push('accept-encoding', 'identity');
  return out;
}
