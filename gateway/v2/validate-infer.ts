import { TollgateError, type ErrorCode } from '../../common/errors.js';
import { V2_DATATYPES, type V2Datatype } from '../../common/model-settings/types.js';
import type { ModelMetadata, TensorMetadata } from './metadata.js';
import { previewValue } from '../../common/value-preview.js';

/**
 * Checks a V2 inference request against the model's metadata before it reaches the runtime, so a
 * mistake gets a 400 naming the input and the rule at fault instead of a runtime stack trace.
 * The checklist is the spec's: JSON body, inputs present, names known, datatype valid and equal to
 * the declared one, shape consistent with data, batch first, content_type for BYTES, base64 that
 * decodes. Pure: no I/O, so it is unit tested alone and costs microseconds on the hot path.
 */

/** Which outputs the client wants as raw bytes: every one, or those named. */
export type BinaryOutputs = 'all' | ReadonlySet<string>;

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

export interface CheckedInferenceRequest {
  /** The client's request id, if it sent one (the response echoes it). */
  id: string | undefined;
  /** The outputs to answer as raw bytes (the binary tensor extension), if any were asked for so. */
  binaryOutputs?: BinaryOutputs;
}

/** The content types a BYTES input may carry: text, or binary such as an image. */
const BYTES_CONTENT_TYPES = ['str', 'base64'] as const;
const NUMERIC_CONTENT_TYPE = 'np';

const DATATYPES: ReadonlySet<string> = new Set(V2_DATATYPES);

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

function bad(code: ErrorCode, message: string, field: string): TollgateError {
  return new TollgateError(code, message, { field });
}

const MAX_INPUT_NAME = 256;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const showShape = (shape: readonly number[]): string => `[${shape.join(',')}]`;

const describe = (t: TensorMetadata): string => `'${t.name}' (${t.datatype} ${showShape(t.shape)})`;

function parseBody(body: Buffer | string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch (e) {
    throw bad(
      'invalid_json',
      `the request body is not valid JSON (${(e as Error).message}); send a V2 inference request: {"inputs": [{"name", "shape", "datatype", "data"}]}`,
      'body',
    );
  }
  if (!isObject(parsed)) {
    throw bad('invalid_request', 'the request body must be a JSON object with an "inputs" array', 'body');
  }
  return parsed;
}

/** A function that checks one data element, given its row-major position; throws if it is wrong. */
type ElementCheck = (value: unknown, index: number) => void;

function elementCheck(name: string, datatype: V2Datatype, contentType: string | undefined): ElementCheck {
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
function countElements(name: string, data: unknown[], rank: number, check: ElementCheck): number {
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

function checkShape(name: string, shape: unknown): number[] {
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

function checkDeclaredShape(name: string, shape: number[], declared: readonly number[]): void {
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

function checkContentType(
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

/**
 * Validates a V2 inference request body against the model's metadata. Throws a 400 TollgateError
 * naming the input and the rule at fault; returns what the handler needs from a valid request.
 * With no declared inputs (a settings file without `inputs`), only the model-independent rules apply.
 */
export function validateInferRequest(
  body: Buffer | string | Record<string, unknown>,
  metadata: ModelMetadata,
  /** Inputs whose values come as raw bytes (binary-tensors.ts checks those against the shape). */
  binaryInputs: ReadonlySet<string> = new Set(),
): CheckedInferenceRequest {
  const request = typeof body === 'string' || Buffer.isBuffer(body) ? parseBody(body) : body;
  const { inputs } = request;
  if (!Array.isArray(inputs) || inputs.length === 0) {
    throw bad(
      'missing_inputs',
      `the request needs a non-empty "inputs" array; model '${metadata.name}' takes ${metadata.inputs.map(describe).join(', ') || 'inputs not declared in its settings'}`,
      'inputs',
    );
  }
  const id = request.id;
  if (id !== undefined && typeof id !== 'string') {
    throw bad('invalid_request', 'the request "id" must be a string', 'id');
  }

  const declaredByName = new Map(metadata.inputs.map((t) => [t.name, t]));
  const seen = new Set<string>();
  let batch: { name: string; size: number } | undefined;

  inputs.forEach((input: unknown, position) => {
    if (!isObject(input) || typeof input.name !== 'string' || input.name === '') {
      throw bad(
        'invalid_input',
        `inputs[${position}] must be an object with a "name" string, "shape", "datatype" and "data"`,
        `inputs[${position}]`,
      );
    }
    const name = input.name;
    // Quoted in every refusal about the input (and its field): a tensor's name, not a payload.
    if (name.length > MAX_INPUT_NAME) {
      throw bad(
        'invalid_input',
        `inputs[${position}].name is ${name.length} characters; an input's name is at most ${MAX_INPUT_NAME}`,
        `inputs[${position}].name`,
      );
    }
    if (seen.has(name)) {
      throw bad('duplicate_input', `input '${name}' is sent twice; send each input once`, `inputs[${name}]`);
    }
    seen.add(name);
    const declared = declaredByName.get(name);
    if (declaredByName.size > 0 && declared === undefined) {
      throw bad(
        'unknown_input',
        `input '${name}' is not an input of model '${metadata.name}'; its inputs are ${metadata.inputs.map(describe).join(', ')}`,
        `inputs[${name}]`,
      );
    }

    const datatype = input.datatype;
    if (typeof datatype !== 'string' || !DATATYPES.has(datatype)) {
      throw bad(
        'invalid_datatype',
        `input '${name}': datatype ${previewValue(datatype)} is not a V2 datatype; use one of ${V2_DATATYPES.join(', ')}`,
        `inputs[${name}].datatype`,
      );
    }
    const v2Datatype = datatype as V2Datatype;
    if (declared && declared.datatype !== v2Datatype) {
      throw bad(
        'datatype_mismatch',
        `input '${name}': datatype ${datatype} does not match the declared ${declared.datatype}`,
        `inputs[${name}].datatype`,
      );
    }

    const shape = checkShape(name, input.shape);
    if (declared) checkDeclaredShape(name, shape, declared.shape);
    const contentType = checkContentType(
      name,
      v2Datatype,
      input.parameters,
      declared,
      binaryInputs.has(name),
    );

    // Raw bytes after the header (binary-tensors.ts counts them against the shape as it decodes).
    if (!binaryInputs.has(name)) {
      if (!Array.isArray(input.data)) {
        throw bad(
          'missing_data',
          `input '${name}': "data" must be a list of values in row-major order (flat or nested)`,
          `inputs[${name}].data`,
        );
      }
      const count = countElements(
        name,
        input.data,
        shape.length,
        elementCheck(name, v2Datatype, contentType),
      );
      const needed = shape.reduce((a, b) => a * b, 1);
      if (count !== needed) {
        throw bad(
          'shape_data_mismatch',
          `input '${name}': shape ${showShape(shape)} needs ${needed} values, data has ${count}`,
          `inputs[${name}].data`,
        );
      }
    }

    // Inputs that the model declares batch-first must agree on the batch size.
    if (declared?.shape[0] === -1) {
      const size = shape[0] as number;
      if (batch === undefined) batch = { name, size };
      else if (batch.size !== size) {
        throw bad(
          'batch_mismatch',
          `input '${name}': batch size ${size} differs from input '${batch.name}' (${batch.size}); every input needs the same number of rows`,
          `inputs[${name}].shape`,
        );
      }
    }
  });

  const missing = metadata.inputs.filter((t) => !seen.has(t.name));
  if (missing.length > 0) {
    throw bad(
      'missing_input',
      `model '${metadata.name}' needs input ${missing.map(describe).join(', ')}; the request does not send it`,
      `inputs[${(missing[0] as TensorMetadata).name}]`,
    );
  }
  checkOutputs(request);
  const binaryOutputs = binaryOutputsWanted(request);
  return binaryOutputs === undefined ? { id } : { id, binaryOutputs };
}

/** Requested outputs: each an object with a name (binary ones are encoded by binary-tensors.ts). */
function checkOutputs(request: Record<string, unknown>): void {
  const { outputs } = request;
  if (outputs === undefined) return;
  if (!Array.isArray(outputs)) {
    throw bad('invalid_request', '"outputs" must be a list of {"name": ...} objects', 'outputs');
  }
  outputs.forEach((output: unknown, position) => {
    if (!isObject(output) || typeof output.name !== 'string' || output.name === '') {
      throw bad(
        'invalid_request',
        `outputs[${position}] must be an object with a "name" string`,
        `outputs[${position}]`,
      );
    }
  });
}
