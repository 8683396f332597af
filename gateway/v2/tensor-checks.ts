import { TollgateError, type ErrorCode } from '../../common/errors.js';
import { V2_DATATYPES, type V2Datatype } from '../../common/model-settings/types.js';
import { previewValue } from '../../common/value-preview.js';
import type { TensorMetadata } from './metadata.js';

/**
 * The checks of one input tensor of a V2 request (validate-infer.ts runs them for each): its
 * shape, against the model's declared one, its content type, and every element of its data.
 */

/** The content types a BYTES input may carry: text, or binary such as an image. */
const BYTES_CONTENT_TYPES = ['str', 'base64'] as const;
const NUMERIC_CONTENT_TYPE = 'np';

export const DATATYPES: ReadonlySet<string> = new Set(V2_DATATYPES);

const INTEGER_RANGES: Partial<Record<V2Datatype, readonly [number, number]>> = {
  INT8: [-128, 127],
  INT16: [-32768, 32767],
  INT32: [-2147483648, 2147483647],
  INT64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  UINT8: [0, 255],
  UINT16: [0, 65535],
  UINT32: [0, 4294967295],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
};

// MLServer decodes with Python's b64decode(validate=True): this alphabet, at most two '=' at the
// end, and a length that is a multiple of 4. What fails that is passed to the model as the raw
// text, silently, so it is refused here. (A character class, not a repeated group: a repeated
// group overflows the regex engine's stack on an image of a few megabytes.)
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
const isBase64 = (s: string): boolean => s.length % 4 === 0 && BASE64_CHARS.test(s);

export function bad(code: ErrorCode, message: string, field: string): TollgateError {
  return new TollgateError(code, message, { field });
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const showShape = (shape: readonly number[]): string => `[${shape.join(',')}]`;

/** A function that checks one data element, given its row-major position; throws if it is wrong. */
export type ElementCheck = (value: unknown, index: number) => void;

export function elementCheck(
  name: string,
  datatype: V2Datatype,
  contentType: string | undefined,
): ElementCheck {
  const field = `inputs[${name}].data`;
  const fail = (index: number, value: unknown, needs: string): never => {
    throw bad(
      'invalid_data',
      `input '${name}': datatype ${datatype} needs ${needs}; value ${index} is ${previewValue(value)}`,
      field,
    );
  };
  if (datatype === 'BYTES') {
    if (contentType === 'base64') {
      return (v, i) => {
        if (typeof v !== 'string') fail(i, v, 'strings');
        else if (!isBase64(v)) {
          throw bad(
            'invalid_base64',
            `input '${name}': value ${i} is not valid base64 (standard alphabet A-Z a-z 0-9 + /, padded with =, no line breaks); encode the file with \`base64 -w0\``,
            field,
          );
        }
      };
    }
    return (v, i) => {
      if (typeof v !== 'string') fail(i, v, 'strings');
    };
  }
  if (datatype === 'BOOL') {
    return (v, i) => {
      if (typeof v !== 'boolean') fail(i, v, 'true or false');
    };
  }
  const range = INTEGER_RANGES[datatype];
  if (range) {
    const [min, max] = range;
    return (v, i) => {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
        fail(i, v, `integers from ${min} to ${max}`);
      }
    };
  }
  return (v, i) => {
    if (typeof v !== 'number') fail(i, v, 'numbers');
  };
}

/**
 * Counts the elements of flat or nested `data`, checking each one. Nested data must be
 * rectangular (what numpy can turn into an array): at each depth every list has the same length,
 * and values sit only at the deepest level.
 */
export function countElements(name: string, data: unknown[], rank: number, check: ElementCheck): number {
  const lengthAtDepth: number[] = [];
  let leafDepth = -1;
  let count = 0;
  const ragged = (): never => {
    throw bad(
      'ragged_data',
      `input '${name}': nested data is ragged (lists of different lengths, or values beside lists); send a flat list in row-major order, or equal-length rows`,
      `inputs[${name}].data`,
    );
  };
  const walk = (node: unknown[], depth: number): void => {
    const expected = lengthAtDepth[depth];
    if (expected === undefined) lengthAtDepth[depth] = node.length;
    else if (expected !== node.length) ragged();
    for (const v of node) {
      if (Array.isArray(v)) {
        if (leafDepth !== -1 && leafDepth <= depth) ragged();
        // Lists nest at most as deep as the shape has dimensions; this also bounds the recursion.
        if (depth + 1 >= rank) {
          throw bad(
            'shape_data_mismatch',
            `input '${name}': data is nested deeper than its shape's ${rank} dimension(s)`,
            `inputs[${name}].data`,
          );
        }
        walk(v, depth + 1);
      } else {
        if (leafDepth === -1) leafDepth = depth;
        else if (leafDepth !== depth) ragged();
        check(v, count);
        count++;
      }
    }
  };
  walk(data, 0);
  return count;
}

/** numpy's own limit on dimensions (before 2.0): no model takes more, and it bounds the data walk. */
const MAX_RANK = 32;

export function checkShape(name: string, shape: unknown): number[] {
  if (Array.isArray(shape) && shape.length > MAX_RANK) {
    throw bad(
      'invalid_shape',
      `input '${name}': shape has ${shape.length} dimensions; at most ${MAX_RANK} are accepted`,
      `inputs[${name}].shape`,
    );
  }
  if (
    !Array.isArray(shape) ||
    shape.length === 0 ||
    !shape.every((d): d is number => typeof d === 'number' && Number.isInteger(d) && d >= 0)
  ) {
    throw bad(
      'invalid_shape',
      `input '${name}': shape must be a non-empty list of non-negative integers, batch first (e.g. [2, 4]); got ${previewValue(shape)}`,
      `inputs[${name}].shape`,
    );
  }
  return shape;
}

export function checkDeclaredShape(name: string, shape: number[], declared: readonly number[]): void {
  const fits = shape.length === declared.length && declared.every((d, i) => d === -1 || d === shape[i]);
  if (!fits) {
    const example = declared.map((d, i) => (d === -1 ? (i === 0 ? 'N' : '*') : String(d))).join(', ');
    throw bad(
      'shape_mismatch',
      `input '${name}': shape ${showShape(shape)} does not match the declared shape ${showShape(declared)}; send [${example}] with the batch size first`,
      `inputs[${name}].shape`,
    );
  }
}

export function checkContentType(
  name: string,
  datatype: V2Datatype,
  parameters: unknown,
  declared: TensorMetadata | undefined,
  /** Raw bytes: without a content_type, the decoder tells text from binary (binary-tensors.ts). */
  binary = false,
): string | undefined {
  const contentType = isObject(parameters) ? parameters.content_type : undefined;
  if (contentType !== undefined && typeof contentType !== 'string') {
    throw bad(
      'invalid_content_type',
      `input '${name}': parameters.content_type must be a string`,
      `inputs[${name}].parameters.content_type`,
    );
  }
  const field = `inputs[${name}].parameters.content_type`;
  if (datatype !== 'BYTES') {
    // MLServer decodes numeric and boolean tensors with its NumPy codec only; any other name
    // would be passed along and ignored, or fail inside the model.
    if (contentType !== undefined && contentType !== NUMERIC_CONTENT_TYPE) {
      throw bad(
        'invalid_content_type',
        `input '${name}': content_type "${contentType}" cannot decode ${datatype} data; use "${NUMERIC_CONTENT_TYPE}" or leave it out`,
        field,
      );
    }
    return contentType;
  }
  if (contentType === undefined) {
    if (binary) return undefined;
    throw bad(
      'missing_content_type',
      `input '${name}': BYTES data needs parameters.content_type: "str" for text, "base64" for binary such as images`,
      field,
    );
  }
  if (!(BYTES_CONTENT_TYPES as readonly string[]).includes(contentType)) {
    throw bad(
      'invalid_content_type',
      `input '${name}': content_type "${contentType}" is not valid for BYTES; use "str" for text or "base64" for binary such as images`,
      field,
    );
  }
  const expected = declared?.parameters.content_type;
  if (
    expected !== undefined &&
    (BYTES_CONTENT_TYPES as readonly string[]).includes(expected) &&
    expected !== contentType
  ) {
    throw bad(
      'content_type_mismatch',
      `input '${name}': content_type "${contentType}" does not match the declared "${expected}"`,
      field,
    );
  }
  return contentType;
}
