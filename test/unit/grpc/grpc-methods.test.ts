import { describe, expect, it } from '@jest/globals';
import { TollgateError } from '../../../common/errors.js';
import type { KeyGrant } from '../../../common/resources/grant.js';
import { InferenceMethods, type Exchange } from '../../../gateway/grpc/methods.js';
import { inferenceService } from '../../../gateway/grpc/protocol.js';
import { HeldMemory } from '../../../gateway/http/held-memory.js';
import type { V2Context } from '../../../gateway/v2/endpoint.js';
import type { InferBody } from '../../../gateway/v2/infer-body.js';
import type { AnswerSink } from '../../../gateway/v2/answer-sink.js';

const LIMIT = 1_000_000;
const grant: KeyGrant = { id: 'k1', owner: 'alice', module: 'platform', roles: ['models:inference'] };
const Infer = inferenceService().ModelInfer;
if (Infer === undefined) throw new Error('no ModelInfer');
const encode = (message: Record<string, unknown>): Buffer => Infer.requestSerialize(message);

/**
 * The gRPC methods on a core whose inference reads the body as the real one does (into a hold of
 * the replica's budget) and answers with `answer`; what the call held is read back.
 */
function setup(answer: unknown) {
  const memory = new HeldMemory(100 * LIMIT, LIMIT);
  const seen = { held: 0, json: '' };
  const core = {
    s: { config: { bodyLimitBytes: LIMIT } },
    access: { authorised: async () => ({ origin: 'http://runtime', basePath: '' }) },
    inference: {
      infer: async (_call: unknown, body: InferBody, sink: AnswerSink) => {
        const held = memory.hold(grant.owner, { advice: 'wait' });
        try {
          const { raw } = await body(held, LIMIT);
          seen.held = memory.held(grant.owner);
          seen.json = raw.toString('latin1');
          sink.whole({}, Buffer.from(JSON.stringify(answer)), undefined);
        } finally {
          held.release();
        }
        return 200;
      },
    },
  } as unknown as V2Context;
  const methods = new InferenceMethods(core);
  const call = (message: Record<string, unknown>) => {
    const wire = encode(message);
    const ex: Exchange<Buffer> = {
      request: wire,
      grant,
      head: { method: 'POST', headers: {}, rawHeaders: [], socket: { remoteAddress: '127.0.0.1' } },
      requestId: 'r1',
    };
    return { wire, answer: methods.modelInfer(ex, (b) => Infer?.requestDeserialize(b)) };
  };
  return { call, seen };
}

const iris = {
  model_name: 'model-iris',
  outputs: [{ name: 'predict', datatype: 'INT64', shape: [1], data: [1] }],
};

describe('a gRPC inference as the core holds it', () => {
  it('counts the tensors laid out again past the message, where typed values grew, and about nothing for raw ones', async () => {
    const values = 20_000;
    const typed = setup(iris);
    const t = typed.call({
      model_name: 'model-iris',
      inputs: [
        {
          name: 'x',
          datatype: 'INT64',
          shape: [values],
          contents: { int64_contents: new Array(values).fill(0) },
        },
      ],
    });
    await t.answer;
    // Each 0 is a byte on the wire and 8 in the layout the runtime's request is made of.
    expect(t.wire.length).toBeLessThan(values * 1.1);
    expect(typed.seen.held).toBeGreaterThanOrEqual(values * 8 - t.wire.length);

    const raw = setup(iris);
    const r = raw.call({
      model_name: 'model-iris',
      inputs: [{ name: 'x', datatype: 'INT64', shape: [values] }],
      raw_input_contents: [Buffer.alloc(values * 8)],
    });
    await r.answer;
    // The message's own claim (call-admission.ts) stands for its raw tensors: counted once.
    expect(raw.seen.held).toBeLessThan(1_000);
  });

  it('answers with every output raw, and refuses one too large to send with its reason', async () => {
    const small = setup(iris).call({
      model_name: 'model-iris',
      inputs: [{ name: 'x', datatype: 'INT64', shape: [1] }],
      raw_input_contents: [Buffer.alloc(8)],
    });
    expect((await small.answer).raw_output_contents).toEqual([Buffer.from([1, 0, 0, 0, 0, 0, 0, 0])]);

    // Within the body limit as JSON ("0," per value), four times it once raw.
    const rows = Math.floor(LIMIT / 2);
    const big = setup({
      model_name: 'model-iris',
      outputs: [{ name: 'predict', datatype: 'INT64', shape: [rows], data: new Array(rows).fill(0) }],
    }).call({
      model_name: 'model-iris',
      inputs: [{ name: 'x', datatype: 'INT64', shape: [1] }],
      raw_input_contents: [Buffer.alloc(8)],
    });
    const err = await big.answer.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TollgateError);
    expect((err as TollgateError).code).toBe('model_answer_too_large');
    expect((err as TollgateError).message).toMatch(
      /as gRPC carries it \(its tensors raw\), past the 2000000 a gRPC answer may; ask for fewer rows/,
    );
  });
});
