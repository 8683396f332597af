import { describe, expect, it } from '@jest/globals';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import {
  loggedAnswer,
  loggedBody,
  REDACTED,
  redact,
  TOO_DEEP,
} from '../../../gateway/v2/payload-log/record.js';
import { partitionOf } from '../../../gateway/v2/payload-log/payload-log.js';

describe('payload log records', () => {
  const request = {
    id: 'r1',
    parameters: { customer: 'alice', content_type: 'np' },
    inputs: [
      { name: 'ssn', datatype: 'BYTES', shape: [1], data: ['123-45-6789'] },
      { name: 'age', datatype: 'INT64', shape: [1], data: [42] },
    ],
  };

  it('redacts a named tensor’s data and a named property anywhere, and nothing else', () => {
    expect(redact(request, new Set(['ssn', 'customer']))).toEqual({
      id: 'r1',
      parameters: { customer: REDACTED, content_type: 'np' },
      inputs: [
        { name: 'ssn', datatype: 'BYTES', shape: [1], data: REDACTED },
        { name: 'age', datatype: 'INT64', shape: [1], data: [42] },
      ],
    });
    expect(redact(request, new Set())).toEqual(request);
  });

  it('stands a value nested past any V2 body for what is below, so a log line can always be written', () => {
    let deep: unknown = [1];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    // JSON.stringify of the value itself throws (call stack); of what the log keeps, it does not.
    expect(() => JSON.stringify(deep)).toThrow();
    const kept = redact({ parameters: { deep } }, new Set());
    expect(JSON.stringify(kept)).toContain(TOO_DEEP);
    // A name below that depth could not be redacted: it is gone with the rest.
    let hidden: unknown = { ssn: '123-45-6789' };
    for (let i = 0; i < 40; i++) hidden = { next: hidden };
    expect(JSON.stringify(redact(hidden, new Set(['ssn'])))).not.toContain('123-45-6789');
  });

  it('keeps of a failed call only its code when the model redacts: refusals and runtime errors quote values', () => {
    const names = new Set(['ssn']);
    const refusal = { code: 'datatype_mismatch', error: "input 'ssn': '123-45-6789' is not a number" };
    expect(loggedAnswer({ status: 400, code: refusal.code, refusal }, undefined, 4096, names)).toEqual({
      code: 'datatype_mismatch',
      error: REDACTED,
    });
    // MLServer's own error body, which quotes what it could not read.
    const runtime = JSON.stringify({ error: 'could not convert string to float: 123-45-6789' });
    const kept = loggedAnswer({ status: 400, code: 'inference_error' }, runtime, 4096, names);
    expect(JSON.stringify(kept)).not.toContain('123-45-6789');
    expect(kept).toEqual({ code: 'inference_error', error: REDACTED });
    // Nothing to redact: the message is kept, for the data team to read.
    expect(loggedAnswer({ status: 400, code: refusal.code, refusal }, undefined, 4096, new Set())).toEqual(
      refusal,
    );
    // A success is the runtime's answer, redacted as it always is.
    const answer = JSON.stringify({ outputs: [{ name: 'ssn', data: ['x'] }] });
    expect(loggedAnswer({ status: 200, code: null }, answer, 4096, names)).toEqual({
      outputs: [{ name: 'ssn', data: REDACTED }],
    });
  });

  it('keeps a body as JSON, as text when it is not JSON, and only its size past the limit', () => {
    const names = new Set(['ssn']);
    expect(loggedBody(Buffer.from(JSON.stringify(request)), 4096, names)).toMatchObject({
      inputs: [
        { name: 'ssn', data: REDACTED },
        { name: 'age', data: [42] },
      ],
    });
    // Text is kept only where nothing is to be redacted: a named field in it could not be found.
    expect(loggedBody('Internal Server Error', 4096, new Set())).toEqual({ text: 'Internal Server Error' });
    expect(loggedBody('{"ssn": "123-45-6789", broken', 4096, names)).toEqual({ unparsed: true, bytes: 29 });
    expect(loggedBody('x'.repeat(5000), 4096, names)).toEqual({ truncated: true, bytes: 5000 });
    expect(loggedBody(123_456, 4096, names)).toEqual({ truncated: true, bytes: 123_456 });
    expect(loggedBody(undefined, 4096, names)).toBeNull();
    // A compressed answer is read as its caller reads it, and bounded after decompression too.
    const answer = Buffer.from(JSON.stringify({ outputs: [{ name: 'ssn', data: ['x'] }] }));
    expect(loggedBody(gzipSync(answer), 4096, names, 'gzip')).toEqual({
      outputs: [{ name: 'ssn', data: REDACTED }],
    });
    expect(loggedBody(brotliCompressSync(answer), 4096, names, 'br')).toMatchObject({
      outputs: [{ data: REDACTED }],
    });
    const bomb = gzipSync(Buffer.alloc(1_000_000, 32));
    expect(loggedBody(bomb, 4096, names, 'gzip')).toEqual({
      truncated: true,
      encodedBytes: bomb.length,
      encoding: 'gzip',
    });
    expect(loggedBody(answer, 4096, names, 'zstd')).toEqual({
      unparsed: true,
      bytes: answer.length,
      encoding: 'zstd',
    });
  });

  it('partitions by namespace, model, its uid, UTC date and hour, the Hive way', () => {
    const uid = '0b6c1f8e-4d2a-4c1e-9f7a-2d8e5b3c9a10';
    expect(partitionOf('team-a', 'model-iris', uid, '2026-11-26T07:05:09.123Z')).toBe(
      `namespace=team-a/model=model-iris/uid=${uid}/date=2026-11-26/hour=07`,
    );
    // Another team that takes the name later writes under its own prefix.
    expect(partitionOf('team-b', 'model-iris', uid, '2026-11-26T07:05:09.123Z')).toMatch(
      /^namespace=team-b\//,
    );
    // A Model made again under the name, in the same namespace, writes beside none of the last one's.
    expect(partitionOf('team-a', 'model-iris', 'another-uid', '2026-11-26T07:05:09.123Z')).toBe(
      'namespace=team-a/model=model-iris/uid=another-uid/date=2026-11-26/hour=07',
    );
    expect(partitionOf('', 'model-iris', undefined, '2026-11-26T07:05:09.123Z')).toBe(
      'model=model-iris/date=2026-11-26/hour=07',
    );
  });
});
