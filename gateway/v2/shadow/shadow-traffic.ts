import type { CallHead } from '../../http/call-head.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { redisChannels } from '../../../common/redis/schema.js';
import type { WakeRequest } from '../../../common/resources/model-scaling.js';
import type { ResolvedVersion, RuntimeAddress } from '../../routing/route-table.js';
import type { GatewayServices } from '../../services.js';
import { readLimited } from '../http.js';
import { decoded } from '../answer-decoding.js';
import { loggedAnswer, loggedBody } from '../payload-log/record.js';
import type { RuntimeClient } from '../runtime-client.js';
import { answersAgree } from './agreement.js';
import { modelAccount } from '../../../common/resources/grant.js';
import { OwnerTally } from '../../http/owner-tally.js';
import { inCohort, type Caller } from '../cohort.js';

/** Copies in flight at once per gateway replica; past it a copy is dropped (and counted), never queued. */
const MAX_IN_FLIGHT = 32;
/**
 * The same per team (the Models' namespace), a quarter: one team's slow shadows, however many
 * models it has, cannot take every other team's copies.
 */
const MAX_IN_FLIGHT_PER_TEAM = MAX_IN_FLIGHT / 4;
/** The last quarter is kept for teams holding fewer than two: whoever holds the rest, a team's first copies go. */
const RESERVED_FOR_LIGHT = MAX_IN_FLIGHT / 4;
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
  /** The model's team (its namespace): its share of the payload log. */
  team: string;
  /** The Model's uid: its figures and payload log are kept under it. */
  uid: string | undefined;
}

/** A copy's place among those in flight, held from the draw until the copy is done (or not made). */
export interface ShadowTicket {
  shadow: ResolvedVersion;
  release(): void;
}

/** How often a call asks the operator to wake a shadow at zero (the copy itself is dropped). */
const WAKE_EVERY_MS = 2_000;

/**
 * Shadow traffic (spec.shadow): a copy of a share of the answered calls goes to the shadow version
 * after the caller has its answer, so the shadow can neither slow nor change a call. Its answer is
 * compared with the serving version's (tollgate_model_shadow_calls_total, the Models page), logged
 * with the payload log when the call was, and dropped.
 */
export class ShadowTraffic {
  private inFlight = 0;
  private readonly byTeam = new OwnerTally();
  private readonly wokenAt = new Map<string, number>();

  constructor(
    private readonly s: GatewayServices,
    private readonly runtimes: RuntimeClient,
  ) {}

  /**
   * Whether a call to this model is copied: its caller in the shadow's cohort (when it has one),
   * drawn at the shadow's percentage, with a place among
   * the copies in flight taken at once (so the answers kept to compare are bounded too). A shadow
   * scaled to zero is asked to wake, and this copy is dropped.
   */
  drawn(
    model: string,
    team: string,
    shadow: ResolvedVersion | undefined,
    caller: Caller,
  ): ShadowTicket | undefined {
    if (shadow === undefined || Math.random() * 100 >= shadow.percent) return undefined;
    if (shadow.cohort !== undefined && !inCohort(shadow.cohort, caller)) return undefined;
    if (shadow.cold === true) this.wake(model, shadow.name);
    if (shadow.cold === true || this.full(team)) {
      this.s.metrics.shadowCall(model, shadow.name, 'dropped');
      if (shadow.cold !== true) this.s.metrics.shareRefused('shadow_copies', team);
      return undefined;
    }
    this.inFlight++;
    this.byTeam.add(team);
    let released = false;
    return {
      shadow,
      release: () => {
        if (released) return;
        released = true;
        this.inFlight--;
        this.byTeam.remove(team);
      },
    };
  }

  private full(team: string): boolean {
    const held = this.byTeam.of(team);
    if (this.inFlight >= MAX_IN_FLIGHT || held >= MAX_IN_FLIGHT_PER_TEAM) return true;
    return this.inFlight >= MAX_IN_FLIGHT - RESERVED_FOR_LIGHT && held >= 2;
  }

  private wake(model: string, version: string): void {
    const key = `${model}|${version}`;
    const now = Date.now();
    if (now - (this.wokenAt.get(key) ?? 0) < WAKE_EVERY_MS) return;
    this.wokenAt.set(key, now);
    for (const [k, at] of this.wokenAt) if (now - at > WAKE_EVERY_MS) this.wokenAt.delete(k);
    const request: WakeRequest = { model, version };
    this.s.redis.publish(redisChannels.modelWake, JSON.stringify(request)).catch((err: unknown) => {
      this.s.log.debug({ err, model }, 'shadow wake-up not sent');
    });
  }

  /** Sends the copy off the call's path, then releases the ticket; never throws. */
  copy(req: CallHead, ticket: ShadowTicket, call: ServedCall, audience: string | undefined): void {
    const { shadow } = ticket;
    const size = (b: Buffer | string | number | undefined) =>
      typeof b === 'number' ? b : typeof b === 'string' ? Buffer.byteLength(b) : (b?.length ?? 0);
    if (size(call.body) > SHADOW_MAX_BYTES || size(call.answer) > SHADOW_MAX_BYTES) {
      this.s.metrics.shadowCall(call.model, shadow.name, 'dropped');
      ticket.release();
      return;
    }
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
        ticket.release();
      });
  }

  private async send(req: CallHead, runtime: RuntimeAddress, call: ServedCall): Promise<void> {
    const { s } = this;
    const version = runtime.version ?? '';
    const startedAt = performance.now();
    let status = 0;
    let text: string | undefined;
    let code: string | undefined;
    let ms: number | undefined;
    try {
      const answer = await this.runtimes.infer(
        req,
        { grant: call.grant, requestId: call.requestId, runtime, plain: true },
        call.model,
        call.query,
        call.body,
        true,
      );
      // To the answer's head, as the serving version's runtime time is measured.
      ms = performance.now() - startedAt;
      status = answer.statusCode;
      text = (await readLimited(answer.body, SHADOW_MAX_BYTES)).bytes.toString('utf8');
    } catch (err) {
      code = (err as { code?: string }).code ?? 'shadow_unreachable';
    }
    ms ??= performance.now() - startedAt;
    const shadowAnswer = status === 200 && text !== undefined ? parse(text) : undefined;
    const servingAnswer = servingJson(call, SHADOW_MAX_BYTES);
    const outcome =
      shadowAnswer === undefined
        ? 'failed'
        : servingAnswer !== undefined && answersAgree(servingAnswer, shadowAnswer)
          ? 'agreed'
          : 'disagreed';
    s.metrics.shadowCall(call.model, version, outcome, outcome === 'failed' ? undefined : ms / 1000);
    s.modelUsage.recordShadow(modelAccount(call.team, call.model, call.uid), outcome, ms, call.servingMs);
    const log = s.payloadLog;
    if (call.logRedact === undefined || log === undefined || !log.hasRoom(call.model, call.team)) return;
    const max = s.config.payloadLogMaxBodyBytes;
    const failure = status === 200 ? null : (code ?? `runtime_${status ?? 0}`);
    try {
      log.offer(
        {
          time: new Date().toISOString(),
          model: call.model,
          version,
          requestId: call.requestId,
          keyId: call.grant.id,
          status,
          code: failure,
          latencyMs: Math.round(ms * 1000) / 1000,
          request: loggedBody(call.body, max, call.logRedact),
          response: loggedAnswer({ status, code: failure }, text, max, call.logRedact),
          shadowOf: { version: call.servingVersion ?? null, agreed: outcome === 'agreed' },
        },
        call.team,
        call.uid,
      );
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
