import { SERVER } from '../usage-export/meter.js';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { enforce } from '../admission/admission.js';
import { noteRefusal } from '../auth/refusals.js';
import type { CallHead } from '../http/call-head.js';
import { OVERRIDE_HEADERS, refuseMethodOverride } from '../routing/method-override.js';
import { normalisePath, type NormalisedPath } from '../routing/normalise.js';
import { usageEndpoint } from '../routing/usage-endpoint.js';
import type { GatewayServices } from '../services.js';
import type { EventsTarget } from '../routing/events-router.js';
import type { V2Context } from '../v2/endpoint.js';
import { matchV2 } from '../v2/paths.js';
import { methodNotAllowed } from '../v2/http.js';

/**
 * Tollgate's decision for a call another proxy makes (Traefik's ForwardAuth and NGINX's
 * auth_request: http-entry.ts; Envoy's ext_authz: ext-authz.ts): the same key check, admission,
 * limits, credits, usage and audit as a call the gateway proxies itself, read from the original
 * method and URI the proxy sends. The original URI is judged in Tollgate's own path layout
 * (`/events/bda/<workflow>/<service>/...`, `/events/platform/api/v1/<resource>`,
 * `/v2/models/<model>/...`) by the same path check, which refuses whatever two parsers could read
 * differently (dot segments, encoded separators), so the path Tollgate allows is the path the
 * proxy routes.
 *
 * What needs the body is not available here: the V2 request checks, a price per row (refused),
 * and `_method` fields in platform bodies (the method-override headers and query are refused as
 * on the gateway).
 */

/** A call another proxy asks about, as its entry (HTTP or ext_authz) read it. */
export interface AskedCall {
  /**
   * The original call: its method and target, its headers (the key among them) and the client's
   * address as the proxy saw it, for the key check, the audit trail and usage.
   */
  head: CallHead & { method: string; url: string };
  requestId: string;
  /** Holds one of the owner's calls in flight until the decision is answered (admission.enter). */
  hold(grant: KeyGrant): void;
}

/**
 * The grant the call may go on with, or Tollgate's refusal (thrown, or the promise rejected).
 * Synchronous while the key, the route and the limits answer from memory, as on the gateway's
 * own hot path: an allowed call waits on no promise.
 */
export function decide(
  s: GatewayServices,
  v2: V2Context,
  call: AskedCall,
  onGrant: (grant: KeyGrant) => void = () => undefined,
): KeyGrant | Promise<KeyGrant> {
  const { head } = call;
  refuseWhatThePathCheckCannotSee(head);
  const path = normalisePath(head.url);
  const grant = s.keys.check(head);
  if (grant instanceof Promise) return grant.then((g) => keyed(s, v2, call, path, g, onGrant));
  return keyed(s, v2, call, path, grant, onGrant);
}

function keyed(
  s: GatewayServices,
  v2: V2Context,
  call: AskedCall,
  path: NormalisedPath,
  grant: KeyGrant,
  onGrant: (grant: KeyGrant) => void,
): KeyGrant | Promise<KeyGrant> {
  const { head } = call;
  onGrant(grant);
  if (path.segments[0] === 'v2') {
    return decideV2(s, v2, grant, head, path, call.requestId, () => call.hold(grant)).then(() => grant);
  }
  if (path.segments[0] !== 'events') {
    throw new TollgateError(
      'unknown_endpoint',
      `Tollgate decides on /events/bda/<bda-id>/<service-id>/..., /events/platform/api/v1/<resource> and /v2/... calls, not ${path.segments[0] === undefined ? '/' : `/${path.segments[0]}`}`,
    );
  }
  const noted = (err: unknown): never => {
    noteRefusal(s.refused, grant, err, head);
    throw err;
  };
  const spend = (target: EventsTarget): KeyGrant | Promise<KeyGrant> => {
    if ('inference' in target && target.inference.perRow !== undefined)
      throw pricedPerRow(target.inference.model);
    call.hold(grant);
    const spent = s.admission.spend(
      grant,
      target.cost ?? 1,
      usageEndpoint(head.method, path),
      target.metered,
    );
    return spent === undefined ? grant : spent.then(() => grant, noted);
  };
  try {
    if (path.segments[1] === 'platform') refuseMethodOverride(head.headers, path.query);
    const target = s.events.resolve(head.method, path, grant);
    return target instanceof Promise ? target.then(spend, noted) : spend(target);
  } catch (err) {
    return noted(err);
  }
}

/**
 * What the gateway would drop or never pass on, but a proxy in front passes to its service as the
 * client wrote it, is refused here instead:
 * - an `X-Tollgate-*` header: the grant's are Tollgate's to set (a proxy replaces those it is told
 *   to, and passes the rest);
 * - a name with `_` that servers turning names into CGI variables (Gunicorn, Puma, WEBrick) read
 *   as `X-Tollgate-*` or a method override;
 * - an upgrade (WebSocket, h2c): a connection judged once, when it opens, that revocation would
 *   not close;
 * - a letter, digit or `-._~` percent-encoded in the path: Tollgate reads `%6f` as `o`, a proxy
 *   routing on the raw path (Envoy's prefix routes) does not, so the two would name different
 *   workflows.
 */
function refuseWhatThePathCheckCannotSee(head: CallHead & { url: string }): void {
  const raw = head.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const dashed = name.replaceAll('_', '-');
    if (dashed.startsWith('x-tollgate-')) {
      throw new TollgateError(
        'invalid_request',
        `the ${raw[i] ?? ''} header is Tollgate's own, set on the calls it lets through; remove it`,
        { field: 'headers' },
      );
    }
    if (name !== dashed && OVERRIDE_HEADERS.includes(dashed)) {
      throw new TollgateError(
        'invalid_request',
        `the ${raw[i] ?? ''} header would be read as ${dashed} by some servers; send headers with "-", not "_"`,
        { field: 'headers' },
      );
    }
  }
  if (head.headers.upgrade !== undefined) {
    throw new TollgateError(
      'invalid_request',
      'protocol upgrades (WebSocket, h2c) are not let through: Tollgate judges every call, and an upgraded connection would outlive its key',
      { field: 'upgrade' },
    );
  }
  const q = head.url.indexOf('?');
  const path = q === -1 ? head.url : head.url.slice(0, q);
  if (/%(?:[46][1-9a-f]|[57][0-9a]|3[0-9]|2[de]|5f|7e)/i.test(path)) {
    throw new TollgateError(
      'invalid_path_encoding',
      'the path percent-encodes a letter, digit or one of -._~; send those as they are (a proxy routing on the raw path would read another path)',
      { field: 'path' },
    );
  }
}

/** A model's endpoints as /v2 judges them (its scope, its workflow and owner, its price), never woken. */
async function decideV2(
  s: GatewayServices,
  v2: V2Context,
  grant: KeyGrant,
  head: CallHead,
  path: NormalisedPath,
  requestId: string,
  holdSlot: () => void,
): Promise<void> {
  const route = matchV2(path.segments);
  if (route.spec.method !== head.method) throw methodNotAllowed(route.spec.method);
  if (route.model === undefined) {
    // The server's own endpoints and the listing: what any key that may call models may ask.
    try {
      enforce(s.admission.scope(grant, { kind: 'models' }));
      holdSlot();
      await s.admission.spend(grant, 1, `${route.spec.method} /${path.segments.join('/')}`, SERVER);
    } catch (err) {
      noteRefusal(s.refused, grant, err, head);
      throw err;
    }
    return;
  }
  const call = { head, requestId, query: path.query, holdSlot };
  const { perRow } = await v2.access.authorised(grant, call, route.model, {
    version: route.version,
    split: route.spec.method === 'POST',
    wake: false,
  });
  if (perRow !== undefined) throw pricedPerRow(route.model);
}

/** A model priced per row: its price is known only from its body's batch, which a proxy's question does not carry. */
const pricedPerRow = (model: string): TollgateError =>
  new TollgateError(
    'priced_per_row',
    `model '${model}' is priced per row of its batch, which Tollgate reads from the request body, and a proxy asking for a decision sends none: send this model's inference through the gateway itself`,
  );
