import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/**
 * The Open Inference Protocol's gRPC service (open-inference.proto) and the shapes its messages
 * take once decoded: field names as in the .proto, 64-bit integers as numbers (the JSON the
 * runtimes read carries no more), bytes as Buffers, every field present (proto3 defaults).
 */

export type InferParameter =
  | { parameter_choice: 'bool_param'; bool_param: boolean }
  | { parameter_choice: 'int64_param'; int64_param: number }
  | { parameter_choice: 'string_param'; string_param: string }
  | { parameter_choice: 'double_param'; double_param: number }
  | { parameter_choice: 'uint64_param'; uint64_param: number }
  | { parameter_choice?: undefined };

export type InferParameters = Record<string, InferParameter>;

export interface TensorContents {
  bool_contents: boolean[];
  int_contents: number[];
  int64_contents: number[];
  uint_contents: number[];
  uint64_contents: number[];
  fp32_contents: number[];
  fp64_contents: number[];
  bytes_contents: Buffer[];
}

export interface InferInputTensor {
  name: string;
  datatype: string;
  shape: number[];
  parameters: InferParameters;
  contents: TensorContents | null;
}

export interface ModelInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters: InferParameters;
  inputs: InferInputTensor[];
  outputs: Array<{ name: string; parameters: InferParameters }>;
  raw_input_contents: Buffer[];
}

/** What the gateway answers: its outputs always raw, in raw_output_contents. */
export interface InferOutputTensor {
  name: string;
  datatype: string;
  shape: number[];
  parameters: InferParameters;
}

export interface ModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  parameters: InferParameters;
  outputs: InferOutputTensor[];
  raw_output_contents: Buffer[];
}

export interface ModelRef {
  name: string;
  version: string;
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
  parameters: InferParameters;
}

export interface ModelMetadataResponse {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
  parameters: InferParameters;
}

const PROTO = fileURLToPath(new URL('./open-inference.proto', import.meta.url));

let root: protobuf.Root | undefined;

/** The .proto's types, read once per process, field names as written. */
export function protocolTypes(): protobuf.Root {
  root ??= new protobuf.Root().loadSync(PROTO, { keepCase: true });
  return root;
}

let service: ServiceDefinition | undefined;

/** `inference.GRPCInferenceService`, from the same types. */
export function inferenceService(): ServiceDefinition {
  if (service !== undefined) return service;
  const definition = fromJSON(protocolTypes().toJSON(), {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: { service: ServiceDefinition } };
  };
  service = pkg.inference.GRPCInferenceService.service;
  return service;
}
