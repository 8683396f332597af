import { TollgateError } from '../../common/errors.js';
import type { V2Datatype } from '../../common/model-settings/types.js';
import type { ModelMetadata } from './metadata.js';

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
 * Raw tensors are row-major and little-endian; BOOL is one byte; each BYTES element is a 4-byte
 * little-endian length and its bytes.
 */

/** Which outputs the client wants as raw bytes: every one, or those named. */
export type BinaryOutputs = 'all' | ReadonlySet<string>;

const SIZES: Partial<Record<V2Datatype, number>> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const bad = (code: 'invalid_binary_data' | 'invalid_json', message: string, field: string): TollgateError =>
  new TollgateError(code, message, { field });

/** What the request asks for in binary, if anything (read from the JSON request object). */
export function binaryOutputsWanted(request: Record<string, unknown>): BinaryOutputs | undefined {
  if (isObject(request.parameters) && request.parameters.binary_data_output === true) return 'all';
  if (!Array.isArray(request.outputs)) return undefined;
  const named = new Set<string>();
  for (const output of request.outputs as unknown[]) {
    if (isObject(output) && typeof output.name === 'string' && isObject(output.parameters)) {
      if (output.parameters.binary_data === true) named.add(output.name);
    }
  }
  return named.size > 0 ? named : undefined;
}

/**
 * The JSON request a runtime reads, from a body in the binary extension's layout. Every error is a
 * 400 naming the input at fault.
 */
export function decodeBinaryRequest(body: Buffer, headerLength: string, metadata: ModelMetadata): string {
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
  const declared = new Map(metadata.inputs.map((t) => [t.name, t]));
  let offset = length;
  const inputs = (header.inputs as unknown[]).map((input, position) => {
    if (!isObject(input) || !isObject(input.parameters) || input.parameters.binary_data_size === undefined) {
      return input;
    }
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
    if (offset + size > body.length) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': binary_data_size ${size} runs past the end of the body (${body.length - offset} bytes left)`,
        field,
      );
    }
    const bytes = body.subarray(offset, offset + size);
    offset += size;
    const { binary_data_size: _size, ...parameters } = input.parameters;
    const datatype = String(input.datatype) as V2Datatype;
    if (datatype !== 'BYTES') {
      return { ...input, parameters, data: decodeFixed(name, datatype, bytes) };
    }
    const contentType =
      typeof parameters.content_type === 'string'
        ? parameters.content_type
        : declared.get(name)?.parameters.content_type;
    const decoded = decodeBytes(name, bytes, contentType);
    return { ...input, parameters: { ...parameters, content_type: decoded.contentType }, data: decoded.data };
  });
  if (offset !== body.length) {
    throw bad(
      'invalid_binary_data',
      `the body has ${body.length - offset} bytes after the inputs' binary data; the binary_data_size values must add up to the body after the JSON header`,
      'body',
    );
  }
  return JSON.stringify({ ...header, inputs });
}

function decodeFixed(name: string, datatype: V2Datatype, bytes: Buffer): Array<number | boolean> {
  const size = SIZES[datatype];
  const field = `inputs[${name}].parameters.binary_data_size`;
  if (size === undefined) {
    throw bad('invalid_binary_data', `input '${name}': ${datatype} data cannot be sent as binary`, field);
  }
  if (bytes.length % size !== 0) {
    throw bad(
      'invalid_binary_data',
      `input '${name}': ${bytes.length} bytes is not a whole number of ${datatype} values (${size} bytes each)`,
      field,
    );
  }
  const out: Array<number | boolean> = [];
  for (let at = 0; at < bytes.length; at += size) {
    const value = readValue(datatype, bytes, at);
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw bad(
        'invalid_binary_data',
        `input '${name}': value ${at / size} is ${String(value)}, which the JSON the runtime reads cannot carry exactly`,
        `inputs[${name}]`,
      );
    }
    out.push(value);
  }
  return out;
}

function readValue(datatype: V2Datatype, b: Buffer, at: number): number | boolean {
  switch (datatype) {
    case 'BOOL':
      return b[at] !== 0;
    case 'UINT8':
      return b.readUInt8(at);
    case 'UINT16':
      return b.readUInt16LE(at);
    case 'UINT32':
      return b.readUInt32LE(at);
    case 'INT8':
      return b.readInt8(at);
    case 'INT16':
      return b.readInt16LE(at);
    case 'INT32':
      return b.readInt32LE(at);
    case 'UINT64':
      return exactly(b.readBigUInt64LE(at));
    case 'INT64':
      return exactly(b.readBigInt64LE(at));
    case 'FP16':
      return halfToNumber(b.readUInt16LE(at));
    case 'FP32':
      return b.readFloatLE(at);
    default:
      return b.readDoubleLE(at);
  }
}

function decodeBytes(
  name: string,
  bytes: Buffer,
  declared: string | undefined,
): { data: string[]; contentType: string } {
  const elements: Buffer[] = [];
  for (let at = 0; at < bytes.length;) {
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
    elements.push(bytes.subarray(at + 4, at + 4 + size));
    at += 4 + size;
  }
  const text = new TextDecoder('utf-8', { fatal: true });
  const asText = (): string[] | undefined => {
    try {
      return elements.map((e) => text.decode(e));
    } catch {
      return undefined;
    }
  };
  // Text when the client or the model says so, or when every element is text; else base64, which
  // MLServer hands to the model as the bytes they were.
  const contentType = declared ?? (asText() === undefined ? 'base64' : 'str');
  if (contentType === 'base64') return { data: elements.map((e) => e.toString('base64')), contentType };
  const strings = asText();
  if (strings === undefined) {
    throw bad(
      'invalid_binary_data',
      `input '${name}': its bytes are not UTF-8 text, as content_type "${contentType}" says; send content_type "base64" for binary data`,
      `inputs[${name}].parameters.content_type`,
    );
  }
  return { data: strings, contentType };
}

/** A 64-bit integer as a number, or NaN when JSON's numbers would not carry it exactly. */
const exactly = (v: bigint): number =>
  v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : NaN;

/** IEEE 754 half precision to a number (Node 20 has no Float16Array). */
function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction === 0 ? sign * Infinity : NaN;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

function numberToHalf(value: number): number {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0] ?? 0;
  const sign = (bits >>> 16) & 0x8000;
  const rawExponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (rawExponent === 0xff) return sign | 0x7c00 | (mantissa === 0 ? 0 : 0x200);
  const exponent = rawExponent - 127 + 15;
  if (exponent >= 31) return sign | 0x7c00;
  if (exponent <= 0) {
    if (exponent < -10) return sign;
    const m = (mantissa | 0x800000) >> (1 - exponent);
    return sign | ((m + 0x1000) >> 13);
  }
  // Adding the rounded mantissa (not OR-ing it) lets a carry move into the exponent.
  return sign | ((exponent << 10) + ((mantissa + 0x1000) >> 13));
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

function encodeTensor(datatype: V2Datatype, data: unknown[], parameters: unknown): Buffer | undefined {
  const values = data.flat(Infinity);
  if (datatype === 'BYTES') {
    const base64 = isObject(parameters) && parameters.content_type === 'base64';
    const parts: Buffer[] = [];
    for (const v of values) {
      if (typeof v !== 'string') return undefined;
      const bytes = base64 ? Buffer.from(v, 'base64') : Buffer.from(v, 'utf8');
      const size = Buffer.alloc(4);
      size.writeUInt32LE(bytes.length);
      parts.push(size, bytes);
    }
    return Buffer.concat(parts);
  }
  const size = SIZES[datatype];
  if (size === undefined) return undefined;
  const out = Buffer.alloc(values.length * size);
  try {
    for (const [i, v] of values.entries()) {
      if (!writeValue(datatype, out, i * size, v)) return undefined;
    }
  } catch {
    // A value out of its datatype's range: the answer goes out as JSON, as the runtime wrote it.
    return undefined;
  }
  return out;
}

function writeValue(datatype: V2Datatype, b: Buffer, at: number, v: unknown): boolean {
  if (datatype === 'BOOL') {
    if (typeof v !== 'boolean') return false;
    b.writeUInt8(v ? 1 : 0, at);
    return true;
  }
  if (typeof v !== 'number') return false;
  switch (datatype) {
    case 'UINT8':
      b.writeUInt8(v, at);
      break;
    case 'UINT16':
      b.writeUInt16LE(v, at);
      break;
    case 'UINT32':
      b.writeUInt32LE(v, at);
      break;
    case 'UINT64':
      b.writeBigUInt64LE(BigInt(Math.trunc(v)), at);
      break;
    case 'INT8':
      b.writeInt8(v, at);
      break;
    case 'INT16':
      b.writeInt16LE(v, at);
      break;
    case 'INT32':
      b.writeInt32LE(v, at);
      break;
    case 'INT64':
      b.writeBigInt64LE(BigInt(Math.trunc(v)), at);
      break;
    case 'FP16':
      b.writeUInt16LE(numberToHalf(v), at);
      break;
    case 'FP32':
      b.writeFloatLE(v, at);
      break;
    default:
      b.writeDoubleLE(v, at);
  }
  return true;
}
