import { TollgateError } from '../../common/errors.js';
import { V2_DATATYPES, type V2Datatype } from '../../common/model-settings/types.js';
import { bytesTensor, encodeTensor } from '../v2/raw-values.js';
import type {
  InferParameters,
  ModelInferRequest,
  ModelInferResponse,
  ModelMetadataResponse,
  TensorContents,
  TensorMetadata,
} from './protocol.js';

/**
 * The gRPC messages of the Open Inference Protocol as the V2 core takes and gives them: a
 * ModelInferRequest becomes a request in the binary tensor extension's layout whose every input is
 * raw (what tritonclient.grpc sends anyway), so the same validator checks both protocols and
 * translates the tensors once; the runtime's JSON answer, read once, becomes the
 * ModelInferResponse with every output in raw_output_contents, as Triton and MLServer answer.
 */

const DATATYPES: ReadonlySet<string> = new Set(V2_DATATYPES);

/** The contents field a datatype's values travel in (FP16 and BF16 only as raw bytes). */
const CONTENTS_FIELD: Partial<Record<V2Datatype, keyof TensorContents>> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
};

const CONTENTS_FIELDS = Object.keys({
  bool_contents: 0,
  int_contents: 0,
  int64_contents: 0,
  uint_contents: 0,
  uint64_contents: 0,
  fp32_contents: 0,
  fp64_contents: 0,
  bytes_contents: 0,
} satisfies Record<keyof TensorContents, 0>) as Array<keyof TensorContents>;

/** Parameters the REST form uses for its own framing: meaningless over gRPC, never passed on. */
const FRAMING_PARAMETERS = new Set(['binary_data', 'binary_data_output', 'binary_data_size']);

const invalid = (message: string, field: string): TollgateError =>
  new TollgateError('invalid_binary_data', message, { field });

/** gRPC parameters as the JSON object the REST form carries. */
function parametersJson(parameters: InferParameters | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(parameters ?? {})) {
    if (FRAMING_PARAMETERS.has(name) || p.parameter_choice === undefined) continue;
    out[name] = (p as Record<string, unknown>)[p.parameter_choice];
  }
  return out;
}

/** A JSON parameters object as gRPC parameters; values that are not scalars have no gRPC form. */
function grpcParameters(json: unknown): InferParameters {
  const out: InferParameters = {};
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return out;
  for (const [name, v] of Object.entries(json as Record<string, unknown>)) {
    if (FRAMING_PARAMETERS.has(name)) continue;
    if (typeof v === 'boolean') out[name] = { parameter_choice: 'bool_param', bool_param: v };
    else if (typeof v === 'string') out[name] = { parameter_choice: 'string_param', string_param: v };
    else if (typeof v === 'number' && Number.isSafeInteger(v))
      out[name] = { parameter_choice: 'int64_param', int64_param: v };
    else if (typeof v === 'number' && Number.isFinite(v))
      out[name] = { parameter_choice: 'double_param', double_param: v };
  }
  return out;
}

/** An input's typed contents as the raw bytes the binary extension carries. */
function contentsBytes(name: string, datatype: string, contents: TensorContents | null): Buffer {
  const field = `inputs[${name}].contents`;
  if (!DATATYPES.has(datatype)) {
    throw new TollgateError(
      'invalid_datatype',
      `input '${name}': datatype '${datatype}' is not a V2 datatype (${V2_DATATYPES.join(', ')})`,
      { field: `inputs[${name}].datatype` },
    );
  }
  const wanted = CONTENTS_FIELD[datatype as V2Datatype];
  const used = CONTENTS_FIELDS.filter((f) => (contents?.[f].length ?? 0) > 0);
  if (wanted === undefined) {
    throw invalid(`input '${name}': ${datatype} values travel only in raw_input_contents`, field);
  }
  const stray = used.find((f) => f !== wanted);
  if (stray !== undefined) {
    throw invalid(
      `input '${name}' is ${datatype}, so its values go in contents.${wanted}, not contents.${stray}`,
      `${field}.${stray}`,
    );
  }
  if (wanted === 'bytes_contents') return bytesTensor(contents?.bytes_contents ?? []);
  const values = (contents?.[wanted] ?? []) as unknown[];
  const bytes = encodeTensor(datatype as V2Datatype, values, undefined);
  if (bytes === undefined) {
    throw invalid(`input '${name}': a value in contents.${wanted} does not fit ${datatype}`, field);
  }
  return bytes;
}

/** The REST request (binary extension) a ModelInferRequest stands for. */
export function inferRequestBody(request: ModelInferRequest): { body: Buffer; headerLength: number } {
  const raw = request.raw_input_contents;
  if (raw.length > 0 && raw.length !== request.inputs.length) {
    throw invalid(
      `raw_input_contents has ${raw.length} entries for ${request.inputs.length} inputs; send one per input, in the inputs' order, or none and every input's contents`,
      'raw_input_contents',
    );
  }
  const tensors: Buffer[] = [];
  const inputs = request.inputs.map((input, i) => {
    let bytes: Buffer;
    if (raw.length > 0) {
      if (CONTENTS_FIELDS.some((f) => (input.contents?.[f].length ?? 0) > 0)) {
        throw invalid(
          `input '${input.name}' has contents while the request sends raw_input_contents; send every input one way`,
          `inputs[${input.name}].contents`,
        );
      }
      bytes = raw[i] as Buffer;
    } else {
      bytes = contentsBytes(input.name, input.datatype, input.contents);
    }
    tensors.push(bytes);
    return {
      name: input.name,
      datatype: input.datatype,
      shape: input.shape,
      parameters: { ...parametersJson(input.parameters), binary_data_size: bytes.length },
    };
  });
  const parameters = parametersJson(request.parameters);
  const header = Buffer.from(
    JSON.stringify({
      ...(request.id === '' ? {} : { id: request.id }),
      parameters,
      inputs,
      ...(request.outputs.length === 0
        ? {}
        : {
            outputs: request.outputs.map((o) => ({
              name: o.name,
              parameters: parametersJson(o.parameters),
            })),
          }),
    }),
  );
  return { body: Buffer.concat([header, ...tensors]), headerLength: header.length };
}

interface JsonTensor {
  name?: unknown;
  datatype?: unknown;
  shape?: unknown;
  parameters?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const shapeOf = (v: unknown): number[] => (Array.isArray(v) ? v.filter((n) => typeof n === 'number') : []);

const unreadable = (message: string): TollgateError => new TollgateError('model_failed', message);

/**
 * The runtime's JSON answer as a ModelInferResponse, every output's values as raw bytes of its
 * datatype. An output whose values its datatype cannot carry raw (or that has none) means the
 * runtime's answer is wrong: it is refused rather than sent with values changed.
 */
export function inferResponse(json: Buffer): ModelInferResponse {
  let answer: unknown;
  try {
    answer = JSON.parse(json.toString('utf8'));
  } catch {
    throw unreadable("the runtime's answer is not valid JSON (cut short?); see the runtime's logs");
  }
  if (!isObject(answer)) throw unreadable("the runtime's answer is not a V2 inference response");
  const outputs = (Array.isArray(answer.outputs) ? answer.outputs : []) as unknown[];
  const raw: Buffer[] = [];
  const described = outputs.map((output) => {
    const o: JsonTensor & { data?: unknown } = isObject(output) ? output : {};
    const name = String(o.name ?? '');
    const bytes =
      Array.isArray(o.data) && DATATYPES.has(String(o.datatype))
        ? encodeTensor(String(o.datatype) as V2Datatype, o.data, o.parameters)
        : undefined;
    if (bytes === undefined) {
      throw unreadable(
        `the runtime's output '${name}' holds values its datatype ${String(o.datatype)} cannot carry; see the model`,
      );
    }
    raw.push(bytes);
    return {
      name,
      datatype: String(o.datatype ?? ''),
      shape: shapeOf(o.shape),
      parameters: grpcParameters(o.parameters),
    };
  });
  return {
    model_name: String(answer.model_name ?? ''),
    model_version: typeof answer.model_version === 'string' ? answer.model_version : '',
    id: typeof answer.id === 'string' ? answer.id : '',
    parameters: grpcParameters(answer.parameters),
    outputs: described,
    raw_output_contents: raw,
  };
}

/** A model's JSON metadata as a ModelMetadataResponse. */
export function metadataResponse(json: Record<string, unknown>): ModelMetadataResponse {
  const tensors = (v: unknown): TensorMetadata[] =>
    (Array.isArray(v) ? (v as unknown[]) : []).map((t) => {
      const tensor: JsonTensor = isObject(t) ? t : {};
      return {
        name: String(tensor.name ?? ''),
        datatype: String(tensor.datatype ?? ''),
        shape: shapeOf(tensor.shape),
        parameters: grpcParameters(tensor.parameters),
      };
    });
  return {
    name: String(json.name ?? ''),
    versions: Array.isArray(json.versions) ? json.versions.map(String) : [],
    platform: typeof json.platform === 'string' ? json.platform : '',
    inputs: tensors(json.inputs),
    outputs: tensors(json.outputs),
    parameters: grpcParameters(json.parameters),
  };
}
