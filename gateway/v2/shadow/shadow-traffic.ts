import type { IncomingMessage } from 'node:http';
import type { KeyGrant } from '../../../common/resources/grant.js';
import type { ResolvedVersion, RuntimeAddress } from '../../routing/route-table.js';
import type { GatewayServices } from '../../services.js';
import { readLimited } from '../http.js';
import { decoded, loggedBody } from '../payload-log/record.js';
import type { RuntimeClient } from '../runtime-client.js';
import { answersAgree } from './agreement.js';

/** Copies in flight at once per gateway replica; past it a copy is dropped (and counted), never queued. */
const MAX_IN_FLIGHT = 32;
/** The same per model: one team's slow shadow cannot take every other team's copies. */
const MAX_IN_FLIGHT_PER_MODEL = 8;
/** Calls larger than this (request or answer) are not copied: a shadow is for judging, not for bulk. */
export const SHADOW_MAX_BYTES = 1024 * 1024;

/** A call the serving version answered with 200, as the shadow needs it. */
export interface ServedCall {
  model: string;
  grant: KeyGrant;
  requestId: string;
  query: string;
  /** The JSON the serving runtime was sent (a binary request as the gateway translated it). */
  body: Buffer | string;
  /** The serving version (undefined: the model has no versions) and its runtime's time. */
  servingVersion: string | undefined;
  servingMs: number;
  /** Its answer as the runtime sent it, or its size when it was too large to keep. */
  answer: Buffer | number | undefined;
  encoding: string | undefined;
  /** Set when this call was sampled for the payload log: the shadow's answer is logged beside it. */
  logRedact: ReadonlySet<string> | undefined;
}

/**
 * Shadow traffic (spec.shadow): a copy of a share of the answered calls goes to the shadow version
 * after the caller has its answer, so the shadow can neither slow nor change a call. Its answer is
 * compared with the serving version's (tollgate_model_shadow_calls_total, the Models page), logged
 * with the payload log when the call was, and dropped.
 */
export class ShadowTraffic {
  private inFlight = 0;
  private readonly byModel = new Map<string, number>();

  constructor(
    private readonly s: GatewayServices,
    private readonly runtimes: RuntimeClient,
  ) {}

  /**
   * The shadow a call to this model is copied to, if any: drawn at its percentage, and only while
   * there is room for the copy (a call is kept whole to compare only if it will be copied).
   */
  drawn(model: string, shadow: ResolvedVersion | undefined): ResolvedVersion | undefined {
    if (shadow === undefined || shadow.cold === true || Math.random() * 100 >= shadow.percent)
      return undefined;
    if (this.full(model)) {
      this.s.metrics.shadowCall(model, shadow.name, 'dropped');
      return undefined;
    }
    return shadow;
  }

  private full(model: string): boolean {
    return this.inFlight >= MAX_IN_FLIGHT || (this.byModel.get(model) ?? 0) >= MAX_IN_FLIGHT_PER_MODEL;
  }

  /** Sends the copy off the call's path; never throws. */
  copy(req: IncomingMessage, shadow: ResolvedVersion, call: ServedCall, audience: string | undefined): void {
    const size = (b: Buffer | string | number | undefined) =>
      typeof b === 'number' ? b : typeof b === 'string' ? Buffer.byteLength(b) : (b?.length ?? 0);
    if (this.full(call.model) || size(call.body) > SHADOW_MAX_BYTES || size(call.answer) > SHADOW_MAX_BYTES) {
      this.s.metrics.shadowCall(call.model, shadow.name, 'dropped');
      return;
    }
    this.inFlight++;
    this.byModel.set(call.model, (this.byModel.get(call.model) ?? 0) + 1);
    const runtime: RuntimeAddress = {
      origin: shadow.origin,
      basePath: shadow.basePath,
      version: shadow.name,
      ...(audience === undefined ? {} : { grantAudience: audience }),
    };
    // The shadow's load is load like any other: its autoscaler must see it.
    const endLoad = this.s.load.begin(call.model, shadow.name);
    void this.send(req, runtime, call)
      .catch((err: unknown) => this.s.log.debug({ err, model: call.model }, 'shadow copy not judged'))
      .finally(() => {
        endLoad();
        this.inFlight--;
        const left = (this.byModel.get(call.model) ?? 1) - 1;
        if (left === 0) this.byModel.delete(call.model);
        else this.byModel.set(call.model, left);
      });
  }

  private async send(req: IncomingMessage, runtime: RuntimeAddress, call: ServedCall): Promise<void> {
    const { s } = this;
    const version = runtime.version ?? '';
    const startedAt = performance.now();
    let status = 0;
    let text: string | undefined;
    let code: string | undefined;
    try {
      const answer = await this.runtimes.infer(
        req,
        { grant: call.grant, requestId: call.requestId, runtime, plain: true },
        call.model,
        call.query,
        call.body,
        true,
      );
      status = answer.statusCode;
      text = await readLimited(answer.body, SHADOW_MAX_BYTES);
    } catch (err) {
      code = (err as { code?: string }).code ?? 'shadow_unreachable';
    }
    const ms = performance.now() - startedAt;
    const shadowAnswer = status === 200 && text !== undefined ? parse(text) : undefined;
    const servingAnswer = servingJson(call, SHADOW_MAX_BYTES);
    const outcome =
      shadowAnswer === undefined
        ? 'failed'
        : servingAnswer !== undefined && answersAgree(servingAnswer, shadowAnswer)
          ? 'agreed'
          : 'disagreed';
    s.metrics.shadowCall(call.model, version, outcome, outcome === 'failed' ? undefined : ms / 1000);
    s.modelUsage.recordShadow(call.model, outcome, ms, call.servingMs);
    const log = s.payloadLog;
    if (call.logRedact === undefined || log === undefined || !log.hasRoom(call.model)) return;
    const max = s.config.payloadLogMaxBodyBytes;
    try {
      log.offer({
        time: new Date().toISOString(),
        model: call.model,
        version,
        requestId: call.requestId,
        keyId: call.grant.id,
        status,
        code: status === 200 ? null : (code ?? `runtime_${status}`),
        latencyMs: Math.round(ms * 1000) / 1000,
        request: loggedBody(call.body, max, call.logRedact),
        response: loggedBody(text, max, call.logRedact),
        shadowOf: { version: call.servingVersion ?? null, agreed: outcome === 'agreed' },
      });
    } catch {
      log.lost(call.model);
    }
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The serving version's answer as JSON; undefined when it was too large to keep or is not JSON. */
function servingJson(call: ServedCall, max: number): unknown {
  if (call.answer === undefined || typeof call.answer === 'number') return undefined;
  const raw = decoded(call.answer, call.encoding, max);
  return Buffer.isBuffer(raw) ? parse(raw.toString()) : undefined;
}
