import type { IncomingMessage, ServerResponse } from 'node:http';
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

/** Largest error body read from a runtime (a traceback can be long; only its last line is used). */
const MAX_ERROR_BODY = 256 * 1024;

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
    const observed = s.metrics.modelCall(call.model, call.runtime.version);
    // A call a central gateway signed for this sidecar was counted there already.
    const endLoad = countedUpstream(call.grant)
      ? undefined
      : s.load.begin(call.model, call.runtime.version ?? '');
    const progress = { checked: false };
    try {
      const status = await this.answer(req, res, call, progress, (seconds) => observed.runtime(seconds));
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

  private async answer(
    req: IncomingMessage,
    res: ServerResponse,
    call: InferCall,
    progress: { checked: boolean },
    runtimeSeconds: (seconds: number) => void,
  ): Promise<number> {
    const { s } = this;
    const { model } = call;
    // The binary tensor extension (tritonclient's default) arrives as a JSON header and raw bytes.
    const declared = req.headers['inference-header-content-length'];
    const binaryHeader = Array.isArray(declared) ? declared.join(',') : declared;
    checkContentType(req, binaryHeader !== undefined);
    const raw = await readBody(req, s.config.bodyLimitBytes);
    const { metadata } = await s.metadata.get(model, call.runtime, call.grant);
    // Checked against the model before anything is decoded; a binary body is translated once.
    const translated =
      binaryHeader === undefined
        ? { json: raw, checked: validateInferRequest(raw, metadata) }
        : decodeBinaryRequest(raw, binaryHeader, metadata, BINARY_EXPANSION * s.config.bodyLimitBytes);
    const { binaryOutputs } = translated.checked;
    progress.checked = true;

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
        return sendBinaryOutputs(res, answer, binaryOutputs, s.config.bodyLimitBytes);
      res.writeHead(200, clientResponseHeaders(answer.headers));
      await pipeline(answer.body, res);
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
