import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { finished, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { HeldKind, HeldMemory } from '../http/held-memory.js';
import { encodeBinaryResponse } from './binary-tensors.js';
import type { BinaryOutputs } from './validate-infer.js';

/**
 * Where an inference's 200 answer goes (gateway/v2/inference.ts): REST's response, or a gRPC
 * call's message (gateway/grpc/answer.ts). Errors are thrown by the core, and each entry sends
 * them in its own form.
 */
export interface AnswerSink {
  /**
   * Passes the runtime's answer on as it comes (through `copy` when the call keeps one). Absent:
   * the entry takes the answer whole, as JSON, and the runtime is asked for it uncompressed.
   */
  stream?: (headers: OutgoingHttpHeaders, body: Readable, copy?: Transform) => Promise<void>;
  /** The whole JSON answer, with the outputs the caller asked for as raw bytes, if any. */
  whole(headers: OutgoingHttpHeaders, json: Buffer, binary: BinaryOutputs | undefined): void;
}

/** An answer re-encoded with binary outputs, held until it has left the process. */
const UNREAD_ANSWER: HeldKind = { advice: 'read your answers as they come' };

/** REST's answer: the runtime's streamed through, or re-encoded with binary outputs when asked. */
export function restAnswer(res: ServerResponse, memory: HeldMemory, owner: string): AnswerSink {
  return {
    async stream(headers, body, copy) {
      res.writeHead(200, headers);
      await (copy === undefined ? pipeline(body, res) : pipeline(body, copy, res));
    },
    whole(headers, json, binary) {
      const encoded = binary === undefined ? undefined : encodeBinaryResponse(json, binary);
      // Made whole here and sent to a client that may not read it: held until it has left the
      // process (written to the socket) or the connection is gone. finished() also calls back for
      // a response whose client left before this point, which no 'close' listener would hear.
      const unread = memory.hold(owner, UNREAD_ANSWER);
      finished(res, () => unread.release());
      const refused = unread.take(json.length + (encoded?.body.length ?? 0));
      if (refused !== undefined) throw refused;
      if (encoded === undefined) {
        res.writeHead(200, { ...headers, 'content-length': String(json.length) });
        res.end(json);
        return;
      }
      res.writeHead(200, {
        ...headers,
        'content-type': 'application/octet-stream',
        'content-length': String(encoded.body.length),
        'inference-header-content-length': String(encoded.headerLength),
      });
      res.end(encoded.body);
    },
  };
}
