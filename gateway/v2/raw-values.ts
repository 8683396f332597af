import type { V2Datatype } from '../../common/model-settings/types.js';

/**
 * Tensor values in their raw layout, both ways: row-major, little-endian, BOOL one byte, each
 * BYTES element a 4-byte little-endian length and its bytes. The binary extension (binary-tensors.ts)
 * and gRPC's raw contents (gateway/grpc/tensors.ts) are both this layout.
 */

/** Bytes per value of each fixed-size datatype (BYTES has none). */
export const SIZES: Partial<Record<V2Datatype, number>> = {
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

/** The value at byte `at`, as JSON carries it (NaN where a 64-bit integer would not fit exactly). */
export function readValue(datatype: V2Datatype, b: Buffer, at: number): number | boolean {
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

/**
 * A BYTES tensor's elements (each a 4-byte little-endian length and its bytes) as a JSON array of
 * strings: text when the client or the model says so or every element is text, else base64. The
 * elements are counted against the shape before any is copied.
 */

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

/** A BYTES tensor's raw form: each element its 4-byte little-endian length, then its bytes. */
export function bytesTensor(elements: readonly Buffer[]): Buffer {
  const out = Buffer.allocUnsafe(elements.reduce((n, e) => n + 4 + e.length, 0));
  let at = 0;
  for (const element of elements) {
    at = out.writeUInt32LE(element.length, at);
    at += element.copy(out, at);
  }
  return out;
}

/**
 * A tensor's JSON values as raw bytes (BYTES: a base64 content_type means the strings are base64),
 * or undefined when a value does not fit the datatype.
 */
export function encodeTensor(datatype: V2Datatype, data: unknown[], parameters: unknown): Buffer | undefined {
  const values = data.flat(Infinity);
  if (datatype === 'BYTES') {
    const base64 = isObject(parameters) && parameters.content_type === 'base64';
    const elements: Buffer[] = [];
    for (const v of values) {
      if (typeof v !== 'string') return undefined;
      elements.push(base64 ? Buffer.from(v, 'base64') : Buffer.from(v, 'utf8'));
    }
    return bytesTensor(elements);
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
