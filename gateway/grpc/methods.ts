import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { isVersionName } from '../../common/resources/model-versions.js';
import type { CallHead } from '../http/call-head.js';
import type { ModelTarget, V2Call, V2Context } from '../v2/endpoint.js';
import { modelMetadataOf } from '../v2/endpoints/model-metadata.js';
import { modelReadiness } from '../v2/endpoints/model-ready.js';
import { DecodeCost } from './decode-cost.js';
import { protocolTypes, type ModelInferRequest, type ModelInferResponse, type ModelRef } from './protocol.js';
import { inferRequestBody, inferResponse, metadataResponse } from './tensors.js';
import type { AnswerSink } from '../v2/answer-sink.js';

/** One admitted gRPC call as its method answers it. */
export interface Exchange<Req = unknown> {
  request: Req;
  grant: KeyGrant;
  head: CallHead;
  requestId: string;
}

/** A message may decode into at most this multiple of the body limit. */
const DECODE_BOUND = 4;
/** An answer may come to at most this multiple of the body limit as gRPC carries it (server.ts sends no more). */
export const MAX_ANSWER = 2;

/**
 * The model methods of the inference service, each the V2 core's call its REST endpoint makes
 * (gateway/v2/endpoints/): the message is the target, the answer the core's value in gRPC's form.
 */
export class InferenceMethods {
  private readonly inferCost = new DecodeCost(protocolTypes().lookupType('inference.ModelInferRequest'));

  constructor(private readonly core: V2Context) {}

  async modelMetadata(ex: Exchange<ModelRef>): Promise<object> {
    const target = await this.target(ex, ex.request.name, ex.request.version);
    const raw = await modelMetadataOf(this.core, ex.grant, target);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      json = undefined;
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      throw new TollgateError(
        'model_failed',
        "the model's metadata is not a JSON object; see the runtime's logs",
      );
    }
    return metadataResponse(json as Record<string, unknown>);
  }

  async modelReady(ex: Exchange<ModelRef>): Promise<{ ready: boolean }> {
    const target = await this.target(ex, ex.request.name, ex.request.version);
    try {
      return { ready: await modelReadiness(this.core, ex.grant, target) };
    } catch (err) {
      // Known, and not ready now: an answer, not an error.
      if (err instanceof TollgateError && err.code === 'model_not_ready') return { ready: false };
      throw err;
    }
  }

  async modelInfer(ex: Exchange<Buffer>, decode: (message: Buffer) => unknown): Promise<ModelInferResponse> {
    const { request, body, headerLength } = this.translated(ex.request, decode);
    const { model, version, call } = await this.target(ex, request.model_name, request.model_version);
    const { access, inference } = this.core;
    const { runtime, perRow } = await access.authorised(ex.grant, call, model, { version, split: true });
    let answer: ModelInferResponse | undefined;
    const limit = this.core.s.config.bodyLimitBytes;
    const sink: AnswerSink = {
      whole: (_headers, json) => {
        answer = inferResponse(json);
        // Raw, an answer read within the limit may grow (a "0," is 8 bytes of INT64): past what
        // the service sends (its tensors, and the rest of the answer at most its JSON's size
        // again), it is refused with its reason rather than cut by grpc-js.
        const bytes = answer.raw_output_contents.reduce((n, b) => n + b.length, 0) + json.length;
        if (bytes > MAX_ANSWER * limit) {
          throw new TollgateError(
            'model_answer_too_large',
            `the model's answer comes to ${bytes} bytes as gRPC carries it (its tensors raw), past the ${MAX_ANSWER * limit} a gRPC answer may; ask for fewer rows at a time`,
          );
        }
      },
    };
    const message = ex.request.length;
    await inference.infer(
      { head: ex.head, model, runtime, grant: ex.grant, requestId: ex.requestId, query: '', perRow },
      // The message is held in the replica's budget already (call-admission.ts), and its claim
      // stands for the copy of its raw tensors made here (the same bytes again, for the call's
      // length); where typed values grew as they were laid out (an INT32 of 1 wire byte takes 4),
      // the growth is taken too.
      async (held) => {
        const refused = held.take(Math.max(0, body.length - message));
        if (refused !== undefined) throw refused;
        return { raw: body, binaryHeader: String(headerLength) };
      },
      sink,
    );
    if (answer === undefined) throw new TollgateError('internal_error', 'the inference gave no answer');
    return answer;
  }

  /** The core's call for an admitted gRPC call: its slot is held by the call's admission. */
  private call(ex: Exchange): V2Call {
    return { head: ex.head, requestId: ex.requestId, query: '', holdSlot: () => undefined };
  }

  /**
   * The model (and version) a call names; a name no model can have is the core's to refuse
   * (access.ts), as REST's. A version no model can have goes no further than REST's paths would
   * let it: refused as REST refuses it, after the key's checks for that model.
   */
  private async target(ex: Exchange, model: string, version: string): Promise<ModelTarget> {
    if (model === '') {
      throw new TollgateError('invalid_field', 'model_name is empty: name the model to call (model-<id>)', {
        field: 'model_name',
      });
    }
    const call = this.call(ex);
    if (version === '') return { model, version: undefined, call };
    if (isVersionName(version)) return { model, version, call };
    // The key's checks for the model, then the core's own answer for a version it does not have.
    try {
      await modelReadiness(this.core, ex.grant, { model, version: '-', call });
    } catch (err) {
      if (!(err instanceof TollgateError) || err.code !== 'model_version_not_found') throw err;
    }
    throw new TollgateError(
      'model_version_not_found',
      `model '${model}' has no version '${version}'; versions are lower-case letters, digits and dashes`,
    );
  }

  /**
   * A ModelInferRequest weighed, decoded and laid out as the binary extension's body. Its key
   * passed, so a message that cannot be one is refused at once, as nothing of any model's is read
   * for it.
   */
  private translated(
    message: Buffer,
    decode: (message: Buffer) => unknown,
  ): { request: ModelInferRequest; body: Buffer; headerLength: number } {
    const limit = this.core.s.config.bodyLimitBytes;
    // Decoding is synchronous: one message at a time holds its decoded form, dropped once translated.
    if (this.inferCost.of(message) > DECODE_BOUND * limit) {
      throw new TollgateError(
        'body_too_large',
        `the ModelInferRequest would decode into more than ${DECODE_BOUND * limit} bytes (its tensors, entries and typed values); send the tensors in raw_input_contents, or fewer rows per call`,
      );
    }
    let request: ModelInferRequest;
    try {
      request = decode(message) as ModelInferRequest;
    } catch (err) {
      throw new TollgateError(
        'bad_request',
        `the message is not a valid ModelInferRequest: ${(err as Error).message}`,
      );
    }
    const { body, headerLength } = inferRequestBody(request);
    if (body.length > limit) {
      throw new TollgateError(
        'body_too_large',
        `the tensors come to ${body.length} bytes as the runtime reads them (INT64 values take 8 bytes each, whatever their size on the wire), past the gateway's limit of ${limit}; send fewer rows per call`,
      );
    }
    return { request, body, headerLength };
  }
}
