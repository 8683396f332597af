import { Transform } from 'node:stream';
import type { GatewayServices } from '../services.js';
import type { InferCall } from './inference.js';
import { loggedAnswer, loggedBody } from './payload-log/record.js';
import { currentTraceId } from '../../common/tracing/call-trace.js';

/**
 * What a call keeps of itself as it goes, when its model logs it (gateway/v2/payload-log) or a
 * shadow version gets a copy of it (gateway/v2/shadow).
 */
export interface Captured {
  /** Logged: the fields to redact. Undefined: kept for the shadow only. */
  redact: ReadonlySet<string> | undefined;
  /** A shadow version gets a copy: the whole answer is kept to compare (within the body limit). */
  shadowed: boolean;
  request?: string | Buffer;
  /** The answer, or its size when it was too large to keep. */
  response?: string | Buffer | number;
  /** The answer's Content-Encoding, as the runtime sent it on. */
  responseEncoding?: string;
  /** The model's team (its namespace): the payload log and the shadow copies have a share per team. */
  team: string;
  /** The Model's uid: its payload log is kept under it (payload-log.ts partitionOf). */
  uid: string | undefined;
}

/**
 * Passes the runtime's answer on untouched while keeping a copy, as long as it stays within `max`
 * bytes; past that only its size.
 */
export function keepCopy(captured: Captured, max: number): Transform {
  const chunks: Buffer[] = [];
  let total = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      total += chunk.length;
      if (total <= max) chunks.push(chunk);
      // Past the limit only the size is kept: what was kept goes at once.
      else chunks.length = 0;
      done(null, chunk);
    },
    flush(done) {
      captured.response = total <= max ? Buffer.concat(chunks) : total;
      done();
    },
  });
}

/** Offers a call to its model's payload log; never throws (a record that cannot be made is counted). */
export function logCall(
  s: Pick<GatewayServices, 'payloadLog' | 'config'>,
  call: Pick<InferCall, 'model' | 'requestId' | 'grant'>,
  version: string | undefined,
  captured: Captured,
  outcome: { status: number; refusal?: { code: string; error: string } },
  startedAt: number,
): void {
  const log = s.payloadLog;
  const redact = captured.redact;
  if (log === undefined || redact === undefined || !log.hasRoom(call.model, captured.team)) return;
  const max = s.config.payloadLogMaxBodyBytes;
  const traceId = currentTraceId();
  try {
    log.offer(
      {
        time: new Date().toISOString(),
        model: call.model,
        version: version ?? null,
        requestId: call.requestId,
        ...(traceId === undefined ? {} : { traceId }),
        keyId: call.grant.id,
        status: outcome.status,
        code: outcome.refusal?.code ?? null,
        latencyMs: Math.round((performance.now() - startedAt) * 1000) / 1000,
        request: loggedBody(captured.request, max, redact),
        response: loggedAnswer(
          { ...outcome, code: outcome.refusal?.code ?? null },
          captured.response,
          max,
          redact,
          captured.responseEncoding,
        ),
      },
      captured.team,
      captured.uid,
    );
  } catch {
    log.lost(call.model);
  }
}
