import { refuseOtherOwner } from '../auth/workflow-owner.js';
import { noteModule } from '../http/call-module.js';
import { TOLLGATE_VERSION } from '../../common/version.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { isModelName } from '../../common/resources/model-name.js';
import { clientResponseHeaders, requestIdOf, upstreamRequestHeaders } from '../proxy/headers.js';
import type { NormalisedPath } from '../routing/normalise.js';
import { reachable } from '../proxy/reachable.js';
import { sendAgainOnConnectionLoss } from '../proxy/send-again.js';
import type { ModelCall } from '../metrics.js';
import type { GatewayServices } from '../services.js';
import type { MetadataCache, RuntimeAddress } from './metadata-cache.js';
import type { ModelDirectory, ModelInfo } from './model-directory.js';
import { readBody } from './read-body.js';
import { runtimeError, runtimeUnreachable } from './runtime-errors.js';
import { validateInferRequest, type BinaryOutputs } from './validate-infer.js';
import { SCALING_DEFAULTS } from '../../common/resources/model-scaling.js';
import { BINARY_EXPANSION, decodeBinaryRequest, encodeBinaryResponse } from './binary-tensors.js';
import { noteRefusal } from '../auth/refusals.js';
import { countedUpstream, withSignedGrant, type GrantedCall } from '../auth/signed-grant.js';
import type { Authenticate } from '../events-handler.js';
import type { ResolvedRoute } from '../routing/route-table.js';

/**
 * The V2 (Open Inference Protocol) endpoints on the gateway's root:
 *
 *   GET  /v2, /v2/health/live, /v2/health/ready  open
 *   GET  /v2/models                              the models this key may call, with readiness
 *   POST /v2/repository/index                    the same, as MLServer's and Triton's index
 *   GET  /v2/models/<m>                          metadata (served from the gateway's cache)
 *   GET  /v2/models/<m>/ready                    the runtime's readiness
 *   POST /v2/models/<m>/infer                    checked against the metadata, then sent on
 *
 * Model endpoints need a platform key whose roles allow inference (`models:inference`, `editor`)
 * or a bda key for the model's workflow. The same inference is reachable as a workflow service,
 * `/events/bda/<workflow>/<model>/v2/models/<model>/infer`, and is checked the same way
 * (see `workflowInference`).
 */
export type V2Handler = (req: IncomingMessage, res: ServerResponse, path: NormalisedPath) => Promise<void>;

/**
 * What differs between the placements: who the caller is, and where a model's runtime answers.
 * The central gateway checks keys and reads the route table; a model's sidecar also takes the
 * grants the central gateway signed, and knows one runtime, its pod's (gateway/sidecar/).
 */
export interface V2Placement {
  authenticate: Authenticate;
  modelRoute(name: string): Promise<ResolvedRoute | null> | ResolvedRoute | null;
}

export const centralPlacement = (s: GatewayServices): V2Placement => ({
  authenticate: (req) => s.keys.check(req),
  modelRoute: (name) => s.routes.model(name),
});

/** Largest error body read from a runtime (a traceback can be long; only its last line is used). */
const MAX_ERROR_BODY = 256 * 1024;

/** GET /v2: the protocol's server metadata (open, like health). */
const SERVER_METADATA = { name: 'tollgate', version: TOLLGATE_VERSION, extensions: [] };

const notFound = (message: string): TollgateError => new TollgateError('unknown_endpoint', message);
const ENDPOINTS =
  'no such V2 endpoint: GET /v2/health/live|ready, GET /v2/models, POST /v2/repository/index, GET /v2/models/<model>[/versions/<version>][/ready], POST /v2/models/<model>[/versions/<version>]/infer';

/** What a call asks of a model's versions: a named one, or (`split`) one drawn by the traffic split. */
interface VersionWanted {
  version: string | undefined;
  split: boolean;
  /** false: a version at zero is not woken (readiness: it serves, once a call comes). */
  wake?: boolean;
}

/** The runtime chosen for a call. */
interface Chosen {
  name?: string;
  origin: string;
  basePath: string;
  cold?: boolean;
}

/** How long a held call waits for a replica: the Model's, which its route carries. */
const activationTimeoutMs = (route: ResolvedRoute | null): number =>
  (route?.route.activationTimeoutSeconds ?? SCALING_DEFAULTS.activationTimeoutSeconds) * 1000;

interface ModelVersionState {
  name: string;
  ready: boolean;
}

/** One version drawn with the weights of its percentages; undefined when none takes any traffic. */
export function splitTraffic<V extends { percent: number }>(
  versions: readonly V[],
  draw = Math.random(),
): V | undefined {
  const total = versions.reduce((a, v) => a + v.percent, 0);
  if (total <= 0) return undefined;
  let left = draw * total;
  for (const v of versions) {
    if (v.percent <= 0) continue;
    left -= v.percent;
    if (left < 0) return v;
  }
  return versions.filter((v) => v.percent > 0).at(-1);
}

function methodNotAllowed(allowed: string): TollgateError {
  return new TollgateError('method_not_allowed', `use ${allowed} on this endpoint`, {
    headers: { allow: allowed },
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

function forbidden(message: string): TollgateError {
  return new TollgateError('model_access_denied', message);
}

export function createV2Handler(
  s: GatewayServices,
  models: ModelDirectory,
  placement: V2Placement = centralPlacement(s),
): V2Handler {
  const cache = s.metadata;

  /** A grant the central gateway signed was rate-limited and counted there already. */
  async function admit(grant: KeyGrant, req: IncomingMessage, endpoint: string): Promise<void> {
    if (countedUpstream(grant)) return;
    if (grant.rateLimit !== undefined) await s.rateLimiter.take(grant);
    s.usage.record(grant.id, `${req.method ?? 'GET'} ${endpoint}`);
  }

  /** A refusal (403, 429) of a key that exists is a key event: audited and counted. */
  async function refusalsNoted<T>(grant: KeyGrant, req: IncomingMessage, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      noteRefusal(s.refused, grant, err, req);
      throw err;
    }
  }

  /** A platform key must allow inference; a bda key may call its workflow's models only. */
  function checkInferenceRole(grant: KeyGrant): void {
    if (grant.module === 'platform' && !s.roles.allows(grant.roles, 'INFER', 'models')) {
      throw forbidden(
        `this key's roles (${grant.roles.join(', ')}) do not allow model inference; use a platform key with role models:inference or editor`,
      );
    }
  }

  /** The models this grant may call, by name, with whether each has a ready replica now. */
  async function callableModels(
    req: IncomingMessage,
  ): Promise<
    Array<{ name: string; workflow: string | undefined; ready: boolean; versions?: ModelVersionState[] }>
  > {
    const grant = await placement.authenticate(req);
    noteModule(req, grant.module);
    await refusalsNoted(grant, req, async () => {
      checkInferenceRole(grant);
      await admit(grant, req, '/v2/models');
    });
    const mine = (await models.list())
      .filter(
        (m) => grant.module === 'platform' || (m.workflow !== undefined && m.workflow === grant.roles[0]),
      )
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return Promise.all(
      mine.map(async (m) => {
        const route = await placement.modelRoute(m.name);
        const readyVersions = new Set((route?.versions ?? []).map((v) => v.name));
        return {
          name: m.name,
          workflow: m.workflow,
          ready: route !== null,
          ...(m.versions === undefined
            ? {}
            : { versions: m.versions.map((name) => ({ name, ready: readyVersions.has(name) })) }),
        };
      }),
    );
  }

  /** GET /v2/models: `{ models: [{ name, ready, versions, workflow? }] }`. */
  async function listModels(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET') throw methodNotAllowed('GET');
    const listed = await callableModels(req);
    sendJson(res, 200, {
      models: listed.map((m) => ({
        name: m.name,
        ready: m.ready,
        versions: (m.versions ?? []).map((v) => v.name),
        ...(m.workflow === undefined ? {} : { workflow: m.workflow }),
      })),
    });
  }

  /**
   * POST /v2/repository/index, as MLServer and Triton answer it: `[{ name, version, state, reason }]`,
   * `{"ready": true}` in the body to list only ready models.
   */
  async function repositoryIndex(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') throw methodNotAllowed('POST');
    checkContentType(req);
    const raw = (await readBody(req, 4096)).toString('utf8').trim();
    let readyOnly = false;
    if (raw !== '') {
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        throw new TollgateError('invalid_json', 'the body is not JSON; send {} or {"ready": true}', {
          field: 'body',
        });
      }
      const ready = (body as { ready?: unknown } | null)?.ready;
      if (
        typeof body !== 'object' ||
        body === null ||
        Array.isArray(body) ||
        (ready !== undefined && typeof ready !== 'boolean')
      ) {
        throw new TollgateError('invalid_request', 'send {} or {"ready": true}', { field: 'ready' });
      }
      readyOnly = ready === true;
    }
    const listed = await callableModels(req);
    // One entry per version, as MLServer lists a model's versions.
    const entries = listed.flatMap((m) =>
      (m.versions ?? [{ name: '', ready: m.ready }]).map((v) => ({
        name: m.name,
        version: v.name,
        ready: v.ready,
      })),
    );
    sendJson(
      res,
      200,
      entries
        .filter((e) => !readyOnly || e.ready)
        .map((e) => ({
          name: e.name,
          version: e.version,
          state: e.ready ? 'READY' : 'UNAVAILABLE',
          reason: e.ready ? '' : 'no ready replica yet',
        })),
    );
  }

  /**
   * The runtime of a model this grant may call; 403, 404 or 503 with the reason otherwise. A version
   * scaled to zero comes back cold: `warm` then holds the call for a replica, once every check
   * that can refuse it has passed (a key over its limit must not wake a model).
   */
  async function runtimeFor(
    model: string,
    grant: KeyGrant,
    want: VersionWanted,
  ): Promise<{ chosen: Chosen; audience: string | undefined }> {
    checkInferenceRole(grant);
    const route = await placement.modelRoute(model);
    let workflow = route?.route.workflow;
    let info: ModelInfo | undefined;
    if (route === null) {
      info = await models.find(model);
      if (info === undefined) {
        throw new TollgateError(
          'model_not_found',
          `no model named '${model}'; list them with GET /events/platform/api/v1/models`,
        );
      }
      workflow = info.workflow;
    }
    if (grant.module === 'bda' && (workflow === undefined || grant.roles[0] !== workflow)) {
      throw forbidden(
        workflow === undefined
          ? `model '${model}' belongs to no workflow, so bda keys cannot call it; use a platform key with role models:inference`
          : `this key is for workflow '${grant.roles[0] ?? ''}'; model '${model}' belongs to another workflow`,
      );
    }
    if (grant.module === 'bda' && workflow !== undefined)
      refuseOtherOwner(route?.route.owner, grant, workflow);
    if (route === null) {
      if (want.version !== undefined) checkVersionExists(model, want.version, info);
      throw new TollgateError('model_not_ready', `model '${model}' has no ready replica yet; retry shortly`, {
        headers: { 'retry-after': '1' },
      });
    }
    return { chosen: await chooseVersion(model, route, want), audience: route.route.grantAudience };
  }

  async function warm(
    model: string,
    want: VersionWanted,
    { chosen, audience }: { chosen: Chosen; audience: string | undefined },
  ): Promise<RuntimeAddress> {
    if (chosen.cold === true && want.wake !== false) chosen = await warmed(model, chosen.name);
    return {
      origin: chosen.origin,
      basePath: chosen.basePath,
      ...(audience === undefined ? {} : { grantAudience: audience }),
      ...(chosen.name === undefined ? {} : { version: chosen.name }),
      ...(chosen.cold === true ? { cold: true } : {}),
    };
  }

  /**
   * Which runtime answers: the version asked for; for an unversioned inference call, one drawn by
   * the traffic split; otherwise the route's own address (the default version when it is ready).
   */
  async function chooseVersion(model: string, route: ResolvedRoute, want: VersionWanted): Promise<Chosen> {
    const versions = route.versions;
    if (versions === undefined) {
      if (want.version !== undefined) {
        throw new TollgateError(
          'model_version_not_found',
          `model '${model}' has no versions; call /v2/models/${model}/... without /versions/${want.version}`,
        );
      }
      return { origin: route.origin, basePath: route.basePath, cold: route.route.cold === true };
    }
    if (want.version !== undefined) {
      const found = versions.find((v) => v.name === want.version);
      if (found !== undefined) return found;
      checkVersionExists(model, want.version, await models.find(model));
      throw new TollgateError(
        'model_not_ready',
        `version '${want.version}' of model '${model}' has no ready replica yet; retry shortly`,
        { headers: { 'retry-after': '1' } },
      );
    }
    const main = versions.find((v) => v.origin === route.origin && v.basePath === route.basePath);
    const fallback = main ?? { origin: route.origin, basePath: route.basePath };
    if (!want.split) return fallback;
    return splitTraffic(versions) ?? fallback;
  }

  /**
   * A version (or an unversioned model) with no ready replica because it was scaled to zero: the
   * call is held while the operator starts one, then goes to it.
   */
  async function warmed(model: string, version: string | undefined, again = true): Promise<Chosen> {
    const chosen = await heldUntilWarm(s, placement.modelRoute, model, version ?? '', (route) => {
      if (route === null) return undefined;
      if (version === undefined) return route.route.cold === true ? undefined : route;
      return route.versions?.find((v) => v.name === version && v.cold !== true);
    });
    // Ready a moment ago and gone again (scaled back down, or the route rewritten): once more.
    if (chosen === undefined && again) return warmed(model, version, false);
    if (chosen === undefined) {
      throw new TollgateError('model_scaling_up', `model '${model}' is starting a replica; retry shortly`, {
        headers: { 'retry-after': '5' },
      });
    }
    return chosen;
  }

  /** 404 for a version the Model does not list (a listed one is only not ready yet). */
  function checkVersionExists(model: string, version: string, info: ModelInfo | undefined): void {
    if (info?.versions?.includes(version)) return;
    throw new TollgateError(
      'model_version_not_found',
      info?.versions === undefined
        ? `model '${model}' has no versions; call /v2/models/${model}/... without /versions/${version}`
        : `model '${model}' has no version '${version}'; its versions are ${info.versions.join(', ')}`,
    );
  }

  async function authorised(
    req: IncomingMessage,
    model: string,
    want: VersionWanted,
  ): Promise<{ grant: KeyGrant; runtime: RuntimeAddress }> {
    const grant = await placement.authenticate(req);
    noteModule(req, grant.module);
    if (!isModelName(model)) {
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; model names look like model-<id>`,
      );
    }
    return refusalsNoted(grant, req, async () => {
      const found = await runtimeFor(model, grant, want);
      await admit(grant, req, `/v2/models/${model}`);
      return { grant, runtime: await warm(model, want, found) };
    });
  }

  /**
   * A versioned model's metadata as its runtime gave it, with `versions` filled in (MLServer leaves
   * it empty): the version asked for, or on the unversioned path every version ready now.
   */
  async function withVersions(model: string, version: string | undefined, raw: Buffer): Promise<Buffer> {
    const listed =
      version === undefined ? (await placement.modelRoute(model))?.versions?.map((v) => v.name) : [version];
    if (listed === undefined) return raw;
    const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    return Buffer.from(JSON.stringify({ ...parsed, versions: listed }));
  }

  async function health(req: IncomingMessage, res: ServerResponse, which: string): Promise<void> {
    if (req.method !== 'GET') throw methodNotAllowed('GET');
    if (which === 'live') return sendJson(res, 200, { live: true });
    // Ready means a call could be checked now: the key store answers, and no shutdown is under way
    // (as /readyz: a draining replica leaves its load balancer by either probe).
    if (s.draining) return sendJson(res, 503, { ready: false });
    try {
      await s.redis.ping();
    } catch {
      return sendJson(res, 503, { ready: false });
    }
    sendJson(res, 200, { ready: true });
  }

  async function ready(
    req: IncomingMessage,
    res: ServerResponse,
    model: string,
    version: string | undefined,
    requestId: string,
  ): Promise<void> {
    const { grant, runtime } = await authorised(req, model, { version, split: false, wake: false });
    // At zero it is ready all the same: a call is held while a replica starts.
    if (runtime.cold === true)
      return sendJson(res, 200, { name: model, ...(version === undefined ? {} : { version }), ready: true });
    let status = 503;
    try {
      const path = `${runtime.basePath}/v2/models/${model}/ready`;
      const headers = await runtimeHeaders(s, req, call(grant, requestId, runtime), {
        method: 'GET',
        target: path,
      });
      // A refused connection is "not ready" now, not after the pauses an inference call waits.
      const answer = await sendAgainOnConnectionLoss(
        () => s.upstreams.get(runtime.origin).request({ method: 'GET', path, headers }),
        [],
      );
      status = answer.statusCode;
      await answer.body.dump();
    } catch {
      // A runtime that cannot be reached is not ready.
    }
    sendJson(res, status === 200 ? 200 : 503, {
      name: model,
      ...(version === undefined ? {} : { version }),
      ready: status === 200,
    });
  }

  return async (req, res, path) => {
    const requestId = requestIdOf(req);
    res.setHeader('x-request-id', requestId);
    const [, area, model, action, ...rest] = path.segments;
    if (area === 'health' && (model === 'live' || model === 'ready') && action === undefined) {
      return health(req, res, model);
    }
    if (area === undefined) {
      if (req.method !== 'GET') throw methodNotAllowed('GET');
      return sendJson(res, 200, SERVER_METADATA);
    }
    if (area === 'models' && model === undefined) return listModels(req, res);
    if (area === 'repository' && model === 'index' && action === undefined) return repositoryIndex(req, res);
    if (area !== 'models' || model === undefined) throw notFound(ENDPOINTS);
    // /v2/models/<m>/versions/<v>[/ready|/infer] names a version; the same without it, the model.
    let version: string | undefined;
    let verb = action;
    if (action === 'versions') {
      [version, verb] = rest;
      if (version === undefined || version === '' || rest.length > 2) throw notFound(ENDPOINTS);
    } else if (rest.length > 0) {
      throw notFound(ENDPOINTS);
    }
    if (verb === undefined) {
      if (req.method !== 'GET') throw methodNotAllowed('GET');
      const { grant, runtime } = await authorised(req, model, { version, split: false });
      const { raw } = await cache.get(model, runtime, grant);
      const body = await withVersions(model, version, raw);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      res.end(body);
      return;
    }
    if (verb === 'ready') {
      if (req.method !== 'GET') throw methodNotAllowed('GET');
      return ready(req, res, model, version, requestId);
    }
    if (verb === 'infer') {
      if (req.method !== 'POST') throw methodNotAllowed('POST');
      const { grant, runtime } = await authorised(req, model, { version, split: true });
      await infer(s, cache, req, res, { model, runtime, grant, requestId, query: path.query });
      return;
    }
    throw notFound(
      `no such V2 endpoint for a model: /v2/models/${model}/${action ?? ''}${version === undefined ? '' : `/${version}/${verb ?? ''}`}`,
    );
  };
}

interface InferCall {
  model: string;
  runtime: RuntimeAddress;
  grant: KeyGrant;
  requestId: string;
  query: string;
}

const call = (grant: KeyGrant, requestId: string, runtime: RuntimeAddress) => ({ grant, requestId, runtime });

/**
 * The headers of a call to a model's runtime: the grant as always, and signed for this one call
 * (`sent`) when a sidecar guards it.
 */
function runtimeHeaders(
  s: GatewayServices,
  req: IncomingMessage,
  c: Pick<InferCall, 'grant' | 'requestId' | 'runtime'>,
  sent: GrantedCall,
): Promise<string[]> {
  return withSignedGrant(
    s.grantSigner,
    upstreamRequestHeaders(req, c.grant, c.requestId),
    c.grant,
    c.runtime.grantAudience,
    sent,
  );
}

/**
 * Reads the request (bounded), checks it against the model's metadata, sends it to the runtime
 * and answers with the runtime's response, or with its error in the V2 shape. Resolves with the
 * status the client got.
 */
async function infer(
  s: GatewayServices,
  cache: MetadataCache,
  req: IncomingMessage,
  res: ServerResponse,
  call: InferCall,
): Promise<number> {
  const observed = s.metrics.modelCall(call.model, call.runtime.version);
  // A call a central gateway signed for this sidecar was counted there already.
  const endLoad = countedUpstream(call.grant)
    ? undefined
    : s.load.begin(call.model, call.runtime.version ?? '');
  const progress = { checked: false };
  try {
    const status = await answerInference(s, cache, req, res, call, observed, progress);
    s.modelUsage.record(call.model, status, observed.end(status) * 1000);
    return status;
  } catch (err) {
    const known = err instanceof TollgateError ? err : undefined;
    const status = known?.status ?? 500;
    // Refused by the gateway's own checks of the body, before the runtime saw it.
    const rejected = !progress.checked && known !== undefined && status < 500;
    const seconds = observed.end(status, known?.code ?? 'internal_error', rejected);
    s.modelUsage.record(call.model, status, seconds * 1000);
    throw err;
  } finally {
    endLoad?.();
  }
}

async function answerInference(
  s: GatewayServices,
  cache: MetadataCache,
  req: IncomingMessage,
  res: ServerResponse,
  call: InferCall,
  observed: ModelCall,
  progress: { checked: boolean },
): Promise<number> {
  const { model, runtime } = call;
  // The binary tensor extension (tritonclient's default) arrives as a JSON header and raw bytes.
  const declared = req.headers['inference-header-content-length'];
  const binaryHeader = Array.isArray(declared) ? declared.join(',') : declared;
  checkContentType(req, binaryHeader !== undefined);
  const raw = await readBody(req, s.config.bodyLimitBytes);
  const { metadata } = await cache.get(model, runtime, call.grant);
  // Checked against the model before anything is decoded; a binary body is translated once.
  const translated =
    binaryHeader === undefined
      ? { json: raw, checked: validateInferRequest(raw, metadata) }
      : decodeBinaryRequest(raw, binaryHeader, metadata, BINARY_EXPANSION * s.config.bodyLimitBytes);
  const body = translated.json;
  const { binaryOutputs } = translated.checked;
  progress.checked = true;

  const path = `${runtime.basePath}/v2/models/${model}/infer${call.query}`;
  const sent = await runtimeHeaders(s, req, call, { method: 'POST', target: path });
  const headers = body === raw ? sent : asJsonBody(sent);
  let answer: Dispatcher.ResponseData;
  const sentAt = performance.now();
  try {
    const send = () =>
      s.upstreams.get(runtime.origin).request({
        method: 'POST',
        path,
        headers,
        body,
      });
    // Inference changes nothing: a replica going away or a Service between endpoints is tried again.
    answer = await sendAgainOnConnectionLoss(send);
  } catch (err) {
    throw runtimeUnreachable(model, err as Error);
  } finally {
    observed.runtime((performance.now() - sentAt) / 1000);
  }
  if (answer.statusCode === 200) {
    res.setHeader('x-request-id', call.requestId);
    if (binaryOutputs !== undefined)
      return sendBinaryOutputs(res, answer, binaryOutputs, s.config.bodyLimitBytes);
    res.writeHead(200, clientResponseHeaders(answer.headers));
    await pipeline(answer.body, res);
    return 200;
  }
  const text = await readLimited(answer.body, MAX_ERROR_BODY);
  const err = runtimeError(model, answer.statusCode, text);
  // The runtime refused what the cached metadata allowed: the model may have changed under it.
  if (err.code !== 'inference_error') cache.forget(model);
  throw err;
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

/**
 * The runtime's JSON answer, with the outputs the client asked for in binary moved into raw bytes
 * after the JSON header (`Inference-Header-Content-Length` says where the header ends).
 */
async function sendBinaryOutputs(
  res: ServerResponse,
  answer: Dispatcher.ResponseData,
  wanted: BinaryOutputs,
  limit: number,
): Promise<number> {
  const json = Buffer.from(await readLimited(answer.body, limit), 'utf8');
  const encoded = encodeBinaryResponse(json, wanted);
  const headers = clientResponseHeaders(answer.headers);
  if (encoded === undefined) {
    res.writeHead(200, { ...headers, 'content-length': String(json.length) });
    res.end(json);
    return 200;
  }
  res.writeHead(200, {
    ...headers,
    'content-type': 'application/octet-stream',
    'content-length': String(encoded.body.length),
    'inference-header-content-length': String(encoded.headerLength),
  });
  res.end(encoded.body);
  return 200;
}

/**
 * A body declared as anything but JSON is refused before it is read: `curl -d` sends a form type,
 * which MLServer would answer with a pydantic message about dictionaries. No Content-Type at all
 * is accepted, since tritonclient sends its JSON requests without one; a binary-extension body
 * may also say it is bytes.
 */
function checkContentType(req: IncomingMessage, binary = false): void {
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

async function readLimited(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < limit) chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

const WORKFLOW_INFER_LENGTH = 8; // events bda <workflow> <service> v2 models <model> infer

/**
 * For the events handler: when a bda call is V2 inference on a model published as the workflow's
 * service, checks it like /v2 and answers it; resolves with the status the client got. Returns
 * undefined for every other call, which the events handler proxies as usual.
 */
export function workflowInference(
  s: GatewayServices,
  req: IncomingMessage,
  res: ServerResponse,
  path: NormalisedPath,
  target: { kind: string; proxy: { origin: string; path: string }; grantAudience?: string },
  grant: KeyGrant,
  requestId: string,
): Promise<number> | undefined {
  if (target.kind !== 'bda') return undefined;
  const seg = path.segments;
  const model = seg[6];
  if (
    req.method !== 'POST' ||
    seg.length !== WORKFLOW_INFER_LENGTH ||
    seg[4] !== 'v2' ||
    seg[5] !== 'models' ||
    seg[7] !== 'infer' ||
    model === undefined ||
    model !== seg[3] ||
    !isModelName(model)
  ) {
    return undefined;
  }
  const suffix = `/v2/models/${model}/infer${path.query}`;
  const { origin, path: upstreamPath } = target.proxy;
  if (!upstreamPath.endsWith(suffix)) return undefined;
  const routed: RuntimeAddress = {
    origin,
    basePath: upstreamPath.slice(0, -suffix.length),
    ...(target.grantAudience === undefined ? {} : { grantAudience: target.grantAudience }),
  };
  return (async () => {
    const runtime = await workflowRuntime(s, model, routed);
    return infer(s, s.metadata, req, res, { model, runtime, grant, requestId, query: path.query });
  })();
}

/**
 * Where a workflow's call to its model goes: where /v2 would send it. The workflow route names the
 * model's main runtime; a model with versions takes the traffic split, and one at zero is held
 * until a replica is ready.
 */
async function workflowRuntime(
  s: GatewayServices,
  model: string,
  routed: RuntimeAddress,
): Promise<RuntimeAddress> {
  const audience = routed.grantAudience === undefined ? {} : { grantAudience: routed.grantAudience };
  const warm = (route: ResolvedRoute | null): RuntimeAddress | undefined => {
    if (route === null) return undefined;
    if (route.versions === undefined)
      return route.route.cold === true
        ? undefined
        : { origin: route.origin, basePath: route.basePath, ...audience };
    const v = splitTraffic(route.versions.filter((x) => x.cold !== true));
    return v === undefined
      ? undefined
      : { origin: v.origin, basePath: v.basePath, version: v.name, ...audience };
  };
  const route = await s.routes.model(model);
  if (route === null || (route.versions === undefined && route.route.cold !== true)) return routed;
  return warm(route) ?? (await heldUntilWarm(s, (m) => s.routes.model(m), model, '', warm)) ?? routed;
}

/**
 * Holds a call while the model (or one `version` of it, "" for any) is at zero, until `pick` finds
 * a ready runtime in its route that takes a connection, then picks once more for this call (calls
 * held together share the wait, not the choice: each draws its own version). Undefined if none is
 * ready after all.
 */
async function heldUntilWarm<T extends { origin: string }>(
  s: GatewayServices,
  lookup: V2Placement['modelRoute'],
  model: string,
  version: string,
  pick: (route: ResolvedRoute | null) => T | undefined,
): Promise<T | undefined> {
  const timeoutMs = activationTimeoutMs(await lookup(model));
  await s.activator.hold(model, version, timeoutMs, async () => {
    const picked = pick(await lookup(model));
    return picked !== undefined && (await reachable(picked.origin));
  });
  return pick(await lookup(model));
}
