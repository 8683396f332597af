import type { IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { countedUpstream } from '../auth/signed-grant.js';
import { clientResponseHeaders } from '../proxy/headers.js';
import type { RuntimeAddress } from '../routing/route-table.js';
import type { GatewayServices } from '../services.js';
import { workflowRuntime } from './activation.js';
import { BINARY_EXPANSION, decodeBinaryRequest, encodeBinaryResponse } from './binary-tensors.js';
import { checkContentType, readLimited } from './http.js';
import { readBody } from './read-body.js';
import { RuntimeClient } from './runtime-client.js';
import { runtimeError } from './runtime-errors.js';
import { validateInferRequest, type BinaryOutputs } from './validate-infer.js';
import { loggedBody } from './payload-log/record.js';

/** Largest error body read from a runtime (a traceback can be long; only its last line is used). */
const MAX_ERROR_BODY = 256 * 1024;

/** What a logged call keeps of itself as it goes (gateway/v2/payload-log). */
interface Captured {
  redact: ReadonlySet<string>;
  request?: string | Buffer;
  /** The answer, or its size when it was too large to keep. */
  response?: string | Buffer | number;
  /** The answer's Content-Encoding, as the runtime sent it on. */
  responseEncoding?: string;
}

/**
 * Passes the runtime's answer on untouched while keeping a copy for the payload log, as long as it
 * stays within `max` bytes; past that only its size.
 */
function keepCopy(captured: Captured, max: number): Transform {
  const chunks: Buffer[] = [];
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      total += chunk.length;
      if (total <= max) chunks.push(chunk);
      // Past the limit only the size is logged: what was kept goes at once.
      else chunks.length = 0;
      done(null, chunk);
    },
    flush(done) {
      captured.response = total <= max ? Buffer.concat(chunks) : total;
      done();
    },
  });
}

/** One inference call, its caller admitted and its runtime chosen. */
export interface InferCall {
  model: string;
  runtime: RuntimeAddress;
  grant: KeyGrant;
  requestId: string;
  /** The query string as sent, `?` included ("" for none). */
  query: string;
}

/** A workflow's call to a model published as its service: where the workflow route sends it. */
export interface WorkflowInferCall extends Omit<InferCall, 'runtime'> {
  /** The workflow whose service the model is. */
  workflow: string;
  routed: RuntimeAddress;
}

/**
 * V2 inference, which two entries call: `/v2/models/<m>/infer` once the access checks chose the
 * runtime, and a workflow's `/events/bda/<wf>/<model>/v2/models/<model>/infer` once its route
 * did. Reads the request (bounded), checks it against the model's metadata, sends it to the
 * runtime and answers with the runtime's response or its error in the V2 shape; measures it.
 * The entry has set the response's x-request-id.
 */
export class Inference {
  constructor(
    private readonly s: GatewayServices,
    private readonly runtimes: RuntimeClient = new RuntimeClient(s),
  ) {}

  /** A workflow's call: to the version the traffic split draws, held while the model is at zero. */
  async workflow(req: IncomingMessage, res: ServerResponse, call: WorkflowInferCall): Promise<number> {
    const { routed, workflow, ...rest } = call;
    const lookup = (m: string) => this.s.routes.model(m);
    const runtime = await workflowRuntime(this.s.activator, lookup, call.model, workflow, routed);
    return this.infer(req, res, { ...rest, runtime });
  }

  /** Resolves with the status the client got. */
  async infer(req: IncomingMessage, res: ServerResponse, call: InferCall): Promise<number> {
    const { s } = this;
    const logged = s.payloadLog === undefined ? undefined : await this.sampled(call.model);
    const startedAt = performance.now();
    const observed = s.metrics.modelCall(call.model, call.runtime.version);
    // A call a central gateway signed for this sidecar was counted there already.
    const endLoad = countedUpstream(call.grant)
      ? undefined
      : s.load.begin(call.model, call.runtime.version ?? '');
    const progress = { checked: false };
    let outcome: { status: number; refusal?: { code: string; error: string } } | undefined;
    try {
      const status = await this.answer(
        req,
        res,
        call,
        progress,
        (seconds) => observed.runtime(seconds),
        logged,
      );
      s.modelUsage.record(call.model, status, observed.end(status) * 1000);
      outcome = { status };
      return status;
    } catch (err) {
      const known = err instanceof TollgateError ? err : undefined;
      const status = known?.status ?? 500;
      // Refused by the gateway's own checks of the body, before the runtime saw it.
      const rejected = !progress.checked && known !== undefined && status < 500;
      const code = known?.code ?? 'internal_error';
      const seconds = observed.end(status, code, rejected);
      s.modelUsage.record(call.model, status, seconds * 1000);
      outcome = {
        status,
        refusal: { code, error: known?.message ?? 'the gateway failed to answer this call' },
      };
      throw err;
    } finally {
      endLoad?.();
      // After the answer, outside it: nothing the log does can change the call.
      if (logged !== undefined && outcome !== undefined) this.logCall(call, logged, outcome, startedAt);
    }
  }

  /** Whether this call is one its model logs (spec.logging, sampled): what is captured of it. */
  private async sampled(model: string): Promise<Captured | undefined> {
    if (this.s.payloadLog === undefined) return undefined;
    let logging;
    try {
      logging = (await this.s.routes.model(model))?.route.logging;
    } catch {
      // The route was read a moment ago to reach this call; if Redis failed since, the call will too.
      return undefined;
    }
    if (logging === undefined || Math.random() >= logging.sampleRate) return undefined;
    return { redact: new Set(logging.redact) };
  }

  /** Offers the call to the payload log; never throws (a record that cannot be made is counted). */
  private logCall(
    call: InferCall,
    captured: Captured,
    outcome: { status: number; refusal?: { code: string; error: string } },
    startedAt: number,
  ): void {
    const log = this.s.payloadLog;
    if (log === undefined || !log.hasRoom(call.model)) return;
    const max = this.s.config.payloadLogMaxBodyBytes;
    try {
      log.offer({
        time: new Date().toISOString(),
        model: call.model,
        version: call.runtime.version ?? null,
        requestId: call.requestId,
        keyId: call.grant.id,
        status: outcome.status,
        code: outcome.refusal?.code ?? null,
        latencyMs: Math.round((performance.now() - startedAt) * 1000) / 1000,
        request: loggedBody(captured.request, max, captured.redact),
        response:
          outcome.refusal ?? loggedBody(captured.response, max, captured.redact, captured.responseEncoding),
      });
    } catch {
      log.lost(call.model);
    }
  }

  private async answer(
    req: IncomingMessage,
    res: ServerResponse,
    call: InferCall,
    progress: { checked: boolean },
    runtimeSeconds: (seconds: number) => void,
    captured: Captured | undefined,
  ): Promise<number> {
    const { s } = this;
    const { model } = call;
    // The binary tensor extension (tritonclient's default) arrives as a JSON header and raw bytes.
    const declared = req.headers['inference-header-content-length'];
    const binaryHeader = Array.isArray(declared) ? declared.join(',') : declared;
    checkContentType(req, binaryHeader !== undefined);
    const raw = await readBody(req, s.config.bodyLimitBytes);
    if (captured !== undefined) captured.request = raw;
    const { metadata } = await s.metadata.get(model, call.runtime, call.grant);
    // Checked against the model before anything is decoded; a binary body is translated once.
    const translated =
      binaryHeader === undefined
        ? { json: raw, checked: validateInferRequest(raw, metadata) }
        : decodeBinaryRequest(raw, binaryHeader, metadata, BINARY_EXPANSION * s.config.bodyLimitBytes);
    const { binaryOutputs } = translated.checked;
    progress.checked = true;
    if (captured !== undefined) captured.request = translated.json;

    let answer: Dispatcher.ResponseData;
    const sentAt = performance.now();
    try {
      answer = await this.runtimes.infer(
        req,
        call,
        model,
        call.query,
        translated.json,
        translated.json !== raw,
      );
    } finally {
      runtimeSeconds((performance.now() - sentAt) / 1000);
    }
    if (answer.statusCode === 200) {
      if (binaryOutputs !== undefined)
        return sendBinaryOutputs(res, answer, binaryOutputs, s.config.bodyLimitBytes, captured);
      res.writeHead(200, clientResponseHeaders(answer.headers));
      if (captured === undefined) {
        await pipeline(answer.body, res);
        return 200;
      }
      const encoding = answer.headers['content-encoding'];
      if (typeof encoding === 'string') captured.responseEncoding = encoding;
      await pipeline(answer.body, keepCopy(captured, s.config.payloadLogMaxBodyBytes), res);
      return 200;
    }
    const text = await readLimited(answer.body, MAX_ERROR_BODY);
    const err = runtimeError(model, answer.statusCode, text);
    // The runtime refused what the cached metadata allowed: the model may have changed under it.
    if (err.code !== 'inference_error') s.metadata.forget(model);
    throw err;
  }
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
  captured: Captured | undefined,
): Promise<number> {
  const json = Buffer.from(await readLimited(answer.body, limit), 'utf8');
  if (captured !== undefined) captured.response = json;
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
