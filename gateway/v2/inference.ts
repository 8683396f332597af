import type { Metered } from '../usage-export/meter.js';
import type { Dispatcher } from 'undici';
import { TollgateError } from '../../common/errors.js';
import { modelAccount, teamOfSource, type KeyGrant } from '../../common/resources/grant.js';
import { countedUpstream } from '../auth/signed-grant.js';
import { runtimeAnswerHeaders } from './answer-headers.js';
import type { ResolvedRoute, RuntimeAddress } from '../routing/route-table.js';
import type { ModelCall } from '../metrics.js';
import { SHADOW_MAX_BYTES, ShadowTraffic, type ServedCall } from './shadow/shadow-traffic.js';
import type { GatewayServices } from '../services.js';
import { workflowRuntime } from './activation.js';
import { callerOf } from './cohort.js';
import { BINARY_EXPANSION, decodeBinaryRequest } from './binary-tensors.js';
import { decoded } from './answer-decoding.js';
import type { AnswerSink } from './answer-sink.js';
import { readLimited } from './http.js';
import type { HeldKind } from '../http/held-memory.js';
import type { CallHead } from '../http/call-head.js';
import { headerValue, type InferBody, type InferRequestBytes } from './infer-body.js';
import { RuntimeClient } from './runtime-client.js';
import { runtimeError } from './runtime-errors.js';
import { validateInferRequest, type BinaryOutputs } from './validate-infer.js';
import { keepCopy, logCall, type Captured } from './call-capture.js';
import type { ModelMetadata } from './metadata.js';
import type { RowCharge } from '../admission/admission.js';
import { noteRefusal } from '../auth/refusals.js';

/** Largest error body read from a runtime (a traceback can be long; only its last line is used). */
const MAX_ERROR_BODY = 256 * 1024;
/** A V2 body, held from its first byte until its call ends. */
const HELD_BODY: HeldKind = {
  advice: 'wait for some of your calls to be answered before sending more large bodies',
};

/** One inference call, its caller admitted and its runtime chosen. */
export interface InferCall {
  /** What the runtime's headers are made of (REST's request, or a gRPC call's metadata). */
  head: CallHead;
  model: string;
  runtime: RuntimeAddress;
  grant: KeyGrant;
  requestId: string;
  /** The query string as sent, `?` included ("" for none). */
  query: string;
  /** Priced per row (access.ts): spent once the batch is checked, before the runtime sees it. */
  perRow?: RowCharge | undefined;
}

/** A workflow's call to a model published as its service: where the workflow route sends it. */
export interface WorkflowInferCall extends Omit<InferCall, 'runtime'> {
  /** The workflow whose service the model is. */
  workflow: string;
  routed: RuntimeAddress;
}

/** A request read and checked once, sent to one runtime or two (a canary's failure, then the default). */
interface Checked {
  body: Buffer | string;
  rewritten: boolean;
  binaryOutputs: BinaryOutputs | undefined;
  rows: number;
}

/** One runtime's try at a call: measured on its own version's metrics, load and figures. */
interface Attempt {
  runtime: RuntimeAddress;
  observed: ModelCall;
  endLoad: (() => void) | undefined;
  startedAt: number;
  /** The runtime's own time (ms): from sending to its answer's head, or to its failure. */
  runtimeMs?: number;
  /** The runtime answered other than 200, or could not be reached. */
  runtimeFailed?: boolean;
}

/**
 * V2 inference, which two entries call: `/v2/models/<m>/infer` once the access checks chose the
 * runtime, and a workflow's `/events/bda/<wf>/<model>/v2/models/<model>/infer` once its route
 * did. Reads the request (bounded), checks it against the model's metadata, sends it to the
 * runtime and answers with the runtime's response or its error in the V2 shape; measures it.
 * A canary the traffic split drew that fails the call hands it to the default version (the caller
 * asked for the model, not the canary); a shadow version gets a copy once the caller has its
 * answer. The entry reads the body (`InferBody`), takes the answer (`AnswerSink`), and sends the
 * errors this throws in its own form.
 */
export class Inference {
  private readonly shadows: ShadowTraffic;

  constructor(
    private readonly s: GatewayServices,
    private readonly runtimes: RuntimeClient = new RuntimeClient(s),
  ) {
    this.shadows = new ShadowTraffic(s, runtimes);
  }

  /** A workflow's call: to the version the traffic split draws, held while the model is at zero. */
  async workflow(call: WorkflowInferCall, body: InferBody, sink: AnswerSink): Promise<number> {
    const { routed, workflow, ...rest } = call;
    const lookup = (m: string) => this.s.routes.model(m);
    const runtime = await workflowRuntime(
      this.s.activator,
      lookup,
      call.model,
      workflow,
      routed,
      callerOf(call.grant),
    );
    return this.infer({ ...rest, runtime }, body, sink);
  }

  /** Resolves with the status the client got. */
  async infer(call: InferCall, requestBody: InferBody, sink: AnswerSink): Promise<number> {
    const { s } = this;
    const route = await this.routeOf(call.model);
    const logging = route?.route.logging;
    const logged = logging !== undefined && Math.random() < logging.sampleRate;
    const team = teamOfSource(route?.route.source);
    const uid = route?.route.uid;
    const account = modelAccount(team, call.model, uid);
    const shadow = this.shadows.drawn(call.model, team, route?.shadow, callerOf(call.grant));
    let copied = false;
    const captured: Captured | undefined =
      logged || shadow !== undefined
        ? { redact: logged ? new Set(logging?.redact) : undefined, shadowed: shadow !== undefined, team, uid }
        : undefined;
    const startedAt = performance.now();
    let attempt = this.begin(call, call.runtime);
    let checked: Checked | undefined;
    let sent = false;
    let outcome: { status: number; refusal?: { code: string; error: string } } | undefined;
    // A canary the split drew that failed the call; the default version answers it instead, with
    // the same request. The canary's try counts against it only once the default has answered (a
    // request both refuse says nothing of the canary), and is measured on its own metrics.
    let canary: { attempt: Attempt; code: string } | undefined;
    // Its body stays in memory until the call ends, whether or not its client is still there.
    const held = s.heldMemory.hold(call.grant.owner, HELD_BODY);
    const fallBack = (err: unknown): void => {
      const fallback = attempt.runtime.fallback;
      if (canary !== undefined || fallback === undefined || !(err instanceof TollgateError)) throw err;
      this.ended(call, attempt, err.status, err.code);
      canary = { attempt, code: err.code };
      attempt = this.begin(call, fallback);
    };
    try {
      const body = await requestBody(held, s.config.bodyLimitBytes);
      if (captured !== undefined) captured.request = body.raw;
      let metadata: ModelMetadata;
      try {
        metadata = await this.metadataOf(call, attempt);
      } catch (err) {
        fallBack(err);
        metadata = await this.metadataOf(call, attempt);
      }
      try {
        checked = this.check(body, metadata, captured);
      } catch (err) {
        // A canary whose inputs refuse what the default's accept: the default answers, and the
        // canary's refusal counts against it once the default has. Anything but a refusal is the
        // gateway's own failure, never the canary's.
        if (attempt.runtime.fallback === undefined || !(err instanceof TollgateError)) throw err;
        attempt.runtimeMs = 0;
        attempt.runtimeFailed = true;
        fallBack(err);
        checked = this.check(body, await this.metadataOf(call, attempt), captured);
      }
      await this.spendRows(call, checked.rows);
      sent = true;
      let answer: Dispatcher.ResponseData;
      try {
        answer = await this.send(call, attempt, checked, sink);
      } catch (err) {
        fallBack(err);
        answer = await this.send(call, attempt, checked, sink);
      }
      if (canary !== undefined) {
        this.figure(account, canary.attempt, true);
        s.metrics.fallback(call.model, canary.attempt.runtime.version ?? '', canary.code);
      }
      const status = await this.deliver(sink, answer, checked, captured);
      this.ended(call, attempt, status);
      this.figure(account, attempt, false);
      outcome = { status };
      if (shadow !== undefined && shadow.shadow.name !== attempt.runtime.version) {
        copied = true;
        this.shadows.copy(
          call.head,
          shadow,
          this.served(call, attempt, checked, captured),
          attempt.runtime.grantAudience,
        );
      }
      return status;
    } catch (err) {
      const known = err instanceof TollgateError ? err : undefined;
      const status = known?.status ?? 500;
      const code = known?.code ?? 'internal_error';
      // Refused by the gateway's own checks of the body or its price, before the runtime saw it.
      const rejected = !sent && known !== undefined && status < 500;
      this.ended(call, attempt, status, code, rejected);
      // The runtime's own part only: a runtime that broke (5xx) fails; one that refused the
      // request (4xx), or answered a client that then went away, did not.
      if (attempt.runtimeMs !== undefined)
        this.figure(account, attempt, attempt.runtimeFailed === true && status >= 500);
      outcome = {
        status,
        refusal: { code, error: known?.message ?? 'the gateway failed to answer this call' },
      };
      throw err;
    } finally {
      held.release();
      if (!copied) shadow?.release();
      s.modelUsage.record(account, outcome?.status ?? 500, performance.now() - startedAt);
      // After the answer, outside it: nothing the log does can change the call.
      if (captured?.redact !== undefined && outcome !== undefined)
        logCall(s, call, attempt.runtime.version, captured, outcome, startedAt);
    }
  }

  /**
   * The batch's rows in its key's usage, and spent at the row's price when the model is priced so;
   * a call the central gateway signed was counted there.
   */
  private async spendRows({ grant, perRow, head, model }: InferCall, rows: number): Promise<void> {
    if (countedUpstream(grant)) return;
    const metered: Metered = { kind: 'model', name: model };
    if (perRow !== undefined) {
      try {
        await this.s.admission.spendRows(grant, perRow, rows);
      } catch (err) {
        noteRefusal(this.s.refused, grant, err, head, metered);
        throw err;
      }
    }
    this.s.usage.rows(grant.id, rows);
    this.s.meter?.rows(grant, metered, rows);
  }

  /** The model's route for what a central gateway adds to a call (payload log, shadow, figures). */
  private async routeOf(model: string): Promise<ResolvedRoute | null | undefined> {
    if (this.s.versionFigures === undefined) return undefined;
    try {
      return await this.s.routes.model(model);
    } catch {
      // The route was read a moment ago to reach this call; if Redis failed since, the call will too.
      return undefined;
    }
  }

  private begin(call: InferCall, runtime: RuntimeAddress): Attempt {
    return {
      runtime,
      observed: this.s.metrics.modelCall(call.model, runtime.version),
      // A call a central gateway signed for this sidecar was counted there already.
      endLoad: countedUpstream(call.grant) ? undefined : this.s.load.begin(call.model, runtime.version ?? ''),
      startedAt: performance.now(),
    };
  }

  /** An attempt is over: its metrics and its load. */
  private ended(call: InferCall, attempt: Attempt, status: number, code?: string, rejected = false): void {
    attempt.endLoad?.();
    attempt.observed.end(status, code, rejected);
  }

  /**
   * A try the traffic split drew, for the figures a rollout is judged on: only those, so a caller
   * who names a version cannot weigh on its rollout, and only the runtime's time, so a client
   * that sends or reads slowly cannot either.
   */
  private figure(model: string, attempt: Attempt, failed: boolean): void {
    const { version, drawn } = attempt.runtime;
    if (drawn !== true || version === undefined || attempt.runtimeMs === undefined) return;
    this.s.versionFigures?.record(model, version, failed, attempt.runtimeMs);
  }

  /** The model's metadata from the attempt's runtime; a failure to get it is the runtime's. */
  private async metadataOf(call: InferCall, attempt: Attempt): Promise<ModelMetadata> {
    const startedAt = performance.now();
    try {
      return (await this.s.metadata.get(call.model, attempt.runtime, call.grant)).metadata;
    } catch (err) {
      attempt.runtimeMs = performance.now() - startedAt;
      attempt.runtimeFailed = true;
      throw err;
    }
  }

  /** Checks the request against the model's metadata before anything is decoded; a binary body is translated once. */
  private check(
    { raw, binaryHeader }: InferRequestBytes,
    metadata: ModelMetadata,
    captured: Captured | undefined,
  ): Checked {
    const translated =
      binaryHeader === undefined
        ? { json: raw, checked: validateInferRequest(raw, metadata) }
        : decodeBinaryRequest(raw, binaryHeader, metadata, BINARY_EXPANSION * this.s.config.bodyLimitBytes);
    if (captured !== undefined) captured.request = translated.json;
    return {
      body: translated.json,
      rewritten: translated.json !== raw,
      binaryOutputs: translated.checked.binaryOutputs,
      rows: translated.checked.rows,
    };
  }

  /** The runtime's 200 answer, its head read; any other answer as the V2 error it stands for. */
  private async send(
    call: InferCall,
    attempt: Attempt,
    checked: Checked,
    sink: AnswerSink,
  ): Promise<Dispatcher.ResponseData> {
    const sentAt = performance.now();
    let answer: Dispatcher.ResponseData;
    try {
      answer = await this.runtimes.infer(
        call.head,
        // An answer made whole here (binary outputs re-encoded, or taken whole by the entry) is
        // read by the gateway: asked uncompressed.
        {
          grant: call.grant,
          requestId: call.requestId,
          runtime: attempt.runtime,
          plain: streamOf(sink, checked) === undefined,
        },
        call.model,
        call.query,
        checked.body,
        checked.rewritten,
      );
    } catch (err) {
      attempt.runtimeFailed = true;
      throw err;
    } finally {
      attempt.runtimeMs = performance.now() - sentAt;
      attempt.observed.runtime(attempt.runtimeMs / 1000);
    }
    if (answer.statusCode === 200) return answer;
    attempt.runtimeFailed = true;
    // MLServer compresses any answer past 500 bytes for a client that accepts it, errors included.
    const { bytes } = await readLimited(answer.body, MAX_ERROR_BODY);
    const body = decoded(bytes, headerValue(answer.headers['content-encoding']), MAX_ERROR_BODY);
    const err = runtimeError(
      call.model,
      answer.statusCode,
      Buffer.isBuffer(body) ? body.toString('utf8') : '',
    );
    // The runtime refused what the cached metadata allowed: the model may have changed under it.
    if (err.code !== 'inference_error') this.s.metadata.forget(call.model);
    throw err;
  }

  /** Passes the 200 answer on (whole when it is re-encoded or the entry wants it so), keeping a copy if the call is captured. */
  private async deliver(
    sink: AnswerSink,
    answer: Dispatcher.ResponseData,
    checked: Checked,
    captured: Captured | undefined,
  ): Promise<number> {
    const limit = this.s.config.bodyLimitBytes;
    const headers = runtimeAnswerHeaders(answer.headers);
    const stream = streamOf(sink, checked);
    if (stream === undefined) {
      const json = await wholeAnswer(answer, limit);
      if (captured !== undefined) captured.response = json;
      delete headers['content-encoding'];
      delete headers['content-length'];
      sink.whole(headers, json, checked.binaryOutputs);
      return 200;
    }
    if (captured === undefined) {
      await stream(headers, answer.body);
      return 200;
    }
    const encoding = answer.headers['content-encoding'];
    if (typeof encoding === 'string') captured.responseEncoding = encoding;
    // A shadow compares whole answers; a log line keeps at most payloadLogMaxBodyBytes of one.
    const logMax = this.s.config.payloadLogMaxBodyBytes;
    const keep = captured.shadowed ? Math.max(SHADOW_MAX_BYTES, logMax) : logMax;
    await stream(headers, answer.body, keepCopy(captured, keep));
    return 200;
  }

  /** What the shadow needs of a call the serving version answered. */
  private served(
    call: InferCall,
    attempt: Attempt,
    checked: Checked,
    captured: Captured | undefined,
  ): ServedCall {
    return {
      model: call.model,
      grant: call.grant,
      requestId: call.requestId,
      query: call.query,
      body: checked.body,
      servingVersion: attempt.runtime.version,
      servingMs: attempt.runtimeMs ?? 0,
      answer: typeof captured?.response === 'string' ? Buffer.from(captured.response) : captured?.response,
      encoding: captured?.responseEncoding,
      logRedact: captured?.redact,
      team: captured?.team ?? '',
      uid: captured?.uid,
    };
  }
}
/**
 * How the answer passes on as it comes; undefined when it is made whole before it goes (binary
 * outputs to re-encode, or an entry that converts it).
 */
function streamOf(sink: AnswerSink, checked: Checked): AnswerSink['stream'] {
  return checked.binaryOutputs === undefined ? sink.stream : undefined;
}

/** The runtime's whole JSON answer, as its client would read it; one past the limit is refused, never sent cut short. */
async function wholeAnswer(answer: Dispatcher.ResponseData, limit: number): Promise<Buffer> {
  // Made only when it is thrown: an error's stack costs more than the rest of a small call.
  const tooLarge = (): TollgateError =>
    new TollgateError(
      'model_answer_too_large',
      `the model's answer is larger than the gateway's body limit (${limit} bytes); ask for fewer rows or outputs at a time`,
    );
  const { bytes, over } = await readLimited(answer.body, limit);
  if (over) throw tooLarge();
  // Asked uncompressed; a runtime that compresses anyway is read as its client would read it.
  const json = decoded(bytes, headerValue(answer.headers['content-encoding']), limit);
  if ('truncated' in json) throw tooLarge();
  if ('unparsed' in json)
    throw new TollgateError(
      'model_failed',
      `the model answered in an encoding the gateway cannot read (${json.encoding})`,
    );
  return json;
}
