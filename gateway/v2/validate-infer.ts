import { V2_DATATYPES, type V2Datatype } from '../../common/model-settings/types.js';
import { previewValue } from '../../common/value-preview.js';
import type { ModelMetadata, TensorMetadata } from './metadata.js';
import {
  bad,
  checkContentType,
  checkDeclaredShape,
  checkShape,
  countElements,
  DATATYPES,
  elementCheck,
  isObject,
  showShape,
} from './tensor-checks.js';

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
  /**
   * The batch's rows: the largest first dimension of the inputs (checkShape: every input has one), what a
   * model priced per row charges and usage counts. Inputs a model declares batch-first agree on it.
   */
  rows: number;
}

const MAX_INPUT_NAME = 256;

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
  let rows = 0;

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
    // Largest, not first: a second input of many rows cannot hide behind a first of one.
    rows = Math.max(rows, shape[0] as number);
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
  return binaryOutputs === undefined ? { id, rows } : { id, rows, binaryOutputs };
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
