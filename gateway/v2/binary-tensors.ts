import { randomBytes } from 'node:crypto';
import { TollgateError } from '../../common/errors.js';
import type { V2Datatype } from '../../common/model-settings/types.js';
import type { ModelMetadata } from './metadata.js';
import { encodeTensor, readValue, SIZES } from './raw-values.js';
import { validateInferRequest, type BinaryOutputs, type CheckedInferenceRequest } from './validate-infer.js';

/**
 * The binary tensor extension of the V2 protocol (Triton's; tritonclient uses it by default),
 * translated for runtimes that speak JSON tensors only, as MLServer does:
 *
 * - a request whose `Inference-Header-Content-Length` says its first N bytes are the JSON header
 *   and the rest the raw tensors of the inputs that carry `parameters.binary_data_size`, becomes one
 *   JSON request (`decodeBinaryRequest`);
 * - outputs asked for in binary (`outputs[].parameters.binary_data`, or the request's
 *   `parameters.binary_data_output`) leave the JSON answer as raw bytes after its header
 *   (`encodeBinaryResponse`).
 *
 * Raw tensors are in the layout raw-values.ts reads and writes.
 */

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const bad = (code: 'invalid_binary_data' | 'invalid_json', message: string, field: string): TollgateError =>
  new TollgateError(code, message, { field });

/**
 * How much larger than the body limit the JSON a runtime reads may be. Raw tensors grow when
 * written as JSON (a BOOL byte becomes up to 6 characters, an FP32 value up to ~24), so a body
 * within the limit could otherwise become a string of hundreds of megabytes: the translation stops
 * with 413 once it passes this multiple, before it holds more.
 */
export const BINARY_EXPANSION = 4;

/** The translated request: the JSON the runtime reads, and what the request checks found. */
export interface TranslatedRequest {
  json: string;
  checked: CheckedInferenceRequest;
}

/** Data values are joined this many at a time: no array of millions of JS values is ever held. */
const CHUNK = 16_384;

/**
 * The JSON request a runtime reads, from a body in the binary extension's layout. The header is
 * checked against the model first (names, datatypes, shapes), so nothing is decoded for a request
 * that would be refused; each tensor's size must then be exactly what its shape and datatype
 * need, and the JSON is written once, within `maxJsonBytes`. Every error is a 400 naming the input
 * at fault, or a 413 past the size bound.
 */
export function decodeBinaryRequest(
  body: Buffer,
  headerLength: string,
  metadata: ModelMetadata,
  maxJsonBytes: number,
): TranslatedRequest {
  const length = Number(headerLength);
  if (!/^\d+$/.test(headerLength) || length > body.length) {
    throw bad(
      'invalid_binary_data',
      `Inference-Header-Content-Length is ${JSON.stringify(headerLength)}, but the body holds ${body.length} bytes: it must be the length of the JSON header at the start of the body`,
      'inference-header-content-length',
    );
  }
  let header: unknown;
  try {
    header = JSON.parse(body.subarray(0, length).toString('utf8'));
  } catch (e) {
    throw bad(
      'invalid_json',
      `the JSON header (the first ${length} bytes, per Inference-Header-Content-Length) is not valid JSON (${(e as Error).message})`,
      'body',
    );
  }
  if (!isObject(header) || !Array.isArray(header.inputs)) {
    throw bad('invalid_json', 'the JSON header must be an object with an "inputs" array', 'body');
  }
  const inputs = header.inputs as unknown[];
  const binary = new Map<number, number>();
  inputs.forEach((input, position) => {
    if (!isObject(input) || !isObject(input.parameters) || input.parameters.binary_data_size === undefined)
      return;
    const name = typeof input.name === 'string' ? input.name : `#${position}`;
    const field = `inputs[${name}].parameters.binary_data_size`;
    const size = input.parameters.binary_data_size;
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': binary_data_size must be a whole number of bytes`,
        field,
      );
    }
    if (input.data !== undefined) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': send its values either in "data" or as binary, not both`,
        field,
      );
    }
    binary.set(position, size);
  });
  // Everything but the raw bytes, against the model: a BOOL tensor for an FP32 input is refused
  // here, before a byte of it is decoded.
  const checked = validateInferRequest(
    header,
    metadata,
    new Set([...binary.keys()].map((p) => (inputs[p] as { name: string }).name)),
  );

  const budget = new JsonBudget(maxJsonBytes, body.length);
  const nonce = randomBytes(8).toString('hex');
  const placeholder = (position: number) => `tollgate-binary-${nonce}-${position}`;
  const texts = new Map<string, string>();
  let offset = length;
  const translated = inputs.map((input, position) => {
    const size = binary.get(position);
    if (size === undefined || !isObject(input) || !isObject(input.parameters)) return input;
    const name = input.name as string;
    if (offset + size > body.length) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': binary_data_size ${size} runs past the end of the body (${body.length - offset} bytes left)`,
        `inputs[${name}].parameters.binary_data_size`,
      );
    }
    const bytes = body.subarray(offset, offset + size);
    offset += size;
    const shape = input.shape as number[];
    const values = shape.reduce((a, b) => a * b, 1);
    const { binary_data_size: _size, ...parameters } = input.parameters;
    const datatype = input.datatype as V2Datatype;
    let out: Record<string, unknown>;
    if (datatype === 'BYTES') {
      const contentType =
        typeof parameters.content_type === 'string'
          ? parameters.content_type
          : metadata.inputs.find((t) => t.name === name)?.parameters.content_type;
      const decoded = bytesJson(name, bytes, values, shape, contentType, budget);
      texts.set(placeholder(position), decoded.json);
      out = { ...input, parameters: { ...parameters, content_type: decoded.contentType } };
    } else {
      texts.set(placeholder(position), fixedJson(name, datatype, bytes, values, shape, budget));
      out = { ...input, parameters };
    }
    return { ...out, data: placeholder(position) };
  });
  if (offset !== body.length) {
    throw bad(
      'invalid_binary_data',
      `the body has ${body.length - offset} bytes after the inputs' binary data; the binary_data_size values must add up to the body after the JSON header`,
      'body',
    );
  }
  // The header as JSON once, each placeholder replaced by its data (written once, above).
  let json = headerJson({ ...header, inputs: translated });
  budget.spend(json.length);
  for (const [mark, text] of texts) json = json.replace(`"${mark}"`, () => text);
  return { json, checked };
}

/** The caller's header written back as JSON: one nested thousands deep cannot be (a 400, not a 500). */
function headerJson(header: Record<string, unknown>): string {
  try {
    return JSON.stringify(header);
  } catch {
    throw bad(
      'invalid_json',
      'the JSON header is nested too deeply to pass on; send parameters as flat values',
      'body',
    );
  }
}

/** The JSON text a translation may still write: 413 past it. */
class JsonBudget {
  private left: number;
  constructor(
    private readonly max: number,
    private readonly bodyBytes: number,
  ) {
    this.left = max;
  }
  spend(chars: number): void {
    this.left -= chars;
    if (this.left < 0) {
      throw new TollgateError(
        'body_too_large',
        `the ${this.bodyBytes}-byte binary request becomes more than ${this.max} bytes of JSON for the runtime (${BINARY_EXPANSION} times the body limit); send fewer rows per call`,
      );
    }
  }
}

const sizeMismatch = (name: string, shape: number[], message: string): TollgateError =>
  new TollgateError('shape_data_mismatch', `input '${name}': shape [${shape.join(',')}] ${message}`, {
    field: `inputs[${name}].parameters.binary_data_size`,
  });

/** A fixed-size tensor's values as a JSON array, written a chunk at a time. */
function fixedJson(
  name: string,
  datatype: V2Datatype,
  bytes: Buffer,
  values: number,
  shape: number[],
  budget: JsonBudget,
): string {
  const size = SIZES[datatype];
  if (size === undefined) {
    throw bad(
      'invalid_binary_data',
      `input '${name}': ${datatype} data cannot be sent as binary`,
      `inputs[${name}].parameters.binary_data_size`,
    );
  }
  if (bytes.length !== values * size) {
    throw sizeMismatch(
      name,
      shape,
      `needs ${values} ${datatype} values, ${values * size} bytes; binary_data_size is ${bytes.length}`,
    );
  }
  const parts: string[] = [];
  const chunk: Array<number | boolean> = [];
  const flush = () => {
    const text = chunk.join(',');
    budget.spend(text.length + 1);
    parts.push(text);
    chunk.length = 0;
  };
  for (let at = 0; at < bytes.length; at += size) {
    const value = readValue(datatype, bytes, at);
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': value ${at / size} is ${String(value)}, which the JSON the runtime reads cannot carry exactly`,
        `inputs[${name}]`,
      );
    }
    chunk.push(value);
    if (chunk.length === CHUNK) flush();
  }
  if (chunk.length > 0) flush();
  return `[${parts.join(',')}]`;
}

function bytesJson(
  name: string,
  bytes: Buffer,
  values: number,
  shape: number[],
  declared: string | undefined,
  budget: JsonBudget,
): { json: string; contentType: string } {
  const ends: number[] = [];
  for (let at = 0; at < bytes.length;) {
    if (ends.length === values) {
      throw sizeMismatch(name, shape, `needs ${values} BYTES elements; its binary data holds more`);
    }
    if (at + 4 > bytes.length) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': a BYTES element's 4-byte length is cut short`,
        `inputs[${name}]`,
      );
    }
    const size = bytes.readUInt32LE(at);
    if (at + 4 + size > bytes.length) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': a BYTES element runs past its binary data`,
        `inputs[${name}]`,
      );
    }
    at += 4 + size;
    ends.push(at);
  }
  if (ends.length !== values) {
    throw sizeMismatch(name, shape, `needs ${values} BYTES elements; its binary data holds ${ends.length}`);
  }
  const element = (i: number): Buffer => bytes.subarray((i === 0 ? 0 : (ends[i - 1] as number)) + 4, ends[i]);
  const text = new TextDecoder('utf-8', { fatal: true });
  const isText = (): boolean => {
    try {
      for (let i = 0; i < ends.length; i++) text.decode(element(i));
      return true;
    } catch {
      return false;
    }
  };
  // Text when the client or the model says so, or when every element is text; else base64, which
  // MLServer hands to the model as the bytes they were.
  const contentType = declared ?? (isText() ? 'str' : 'base64');
  const parts: string[] = [];
  for (let i = 0; i < ends.length; i++) {
    let value: string;
    if (contentType === 'base64') value = element(i).toString('base64');
    else {
      try {
        value = text.decode(element(i));
      } catch {
        throw bad(
          'invalid_binary_data',
          `input '${name}': its bytes are not UTF-8 text, as content_type "${contentType}" says; send content_type "base64" for binary data`,
          `inputs[${name}].parameters.content_type`,
        );
      }
    }
    const quoted = JSON.stringify(value);
    budget.spend(quoted.length + 1);
    parts.push(quoted);
  }
  return { json: `[${parts.join(',')}]`, contentType };
}

/**
 * The runtime's JSON answer with the wanted outputs moved into raw bytes after the JSON header,
 * or undefined when there is nothing to move (the answer then goes out as it came).
 */
export function encodeBinaryResponse(
  json: Buffer,
  wanted: BinaryOutputs,
): { body: Buffer; headerLength: number } | undefined {
  let answer: unknown;
  try {
    answer = JSON.parse(json.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(answer) || !Array.isArray(answer.outputs)) return undefined;
  const buffers: Buffer[] = [];
  const outputs = (answer.outputs as unknown[]).map((output) => {
    if (!isObject(output) || typeof output.name !== 'string' || !Array.isArray(output.data)) return output;
    if (wanted !== 'all' && !wanted.has(output.name)) return output;
    const bytes = encodeTensor(String(output.datatype) as V2Datatype, output.data, output.parameters);
    if (bytes === undefined) return output;
    buffers.push(bytes);
    const { data: _data, ...rest } = output;
    const parameters = isObject(output.parameters) ? output.parameters : {};
    return { ...rest, parameters: { ...parameters, binary_data_size: bytes.length } };
  });
  if (buffers.length === 0) return undefined;
  const header = Buffer.from(JSON.stringify({ ...answer, outputs }));
  return { body: Buffer.concat([header, ...buffers]), headerLength: header.length };
}
