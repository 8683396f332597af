import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type Client,
  type ServiceError,
} from '@grpc/grpc-js';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { inferenceService } from '../../gateway/grpc/protocol.js';
import { venvPaths } from './venv.js';

/** What one unary call got: its answer or its error, and the headers the server sent. */
export interface GrpcResult {
  error?: ServiceError;
  value?: Record<string, unknown>;
  header?: Metadata;
}

/** What triton_grpc_client.py reports: each call the official client made, and each refusal it got. */
export interface TritonGrpcReport {
  live: boolean;
  ready: boolean;
  server: { name: string; version: string };
  model_ready: boolean;
  metadata: {
    name: string;
    versions?: string[];
    inputs: Array<{ name: string; datatype: string; shape: string[] }>;
  };
  id: string;
  model_name: string;
  model_version: string;
  predict: number[];
  predict_proba: number[];
  proba_shape: number[];
  every_outputs: string[];
  versioned?: { model_version: string; predict: number[]; ready: boolean };
  refused: Record<string, { status: string; message: string } | null>;
}

/** The two iris rows the script sends. */
export const TRITON_GRPC_ROWS = [
  [5.1, 3.5, 1.4, 0.2],
  [6.7, 3.0, 5.2, 2.3],
];

/** tritonclient.grpc, the official client, against `address` (host:port), as a user runs it. */
export async function tritonGrpc(
  address: string,
  model: string,
  key: string,
  version?: string,
): Promise<TritonGrpcReport> {
  const script = path.join(import.meta.dirname, 'triton_grpc_client.py');
  const { stdout } = await promisify(execFile)(venvPaths().python, [
    script,
    address,
    model,
    key,
    ...(version === undefined ? [] : [version]),
  ]);
  return JSON.parse(stdout) as TritonGrpcReport;
}

/** A plain gRPC client of the Open Inference Protocol's service, for what tritonclient never sends. */
export class InferenceClient {
  private readonly client: Client & Record<string, (...args: unknown[]) => unknown>;

  /** `ownConnection`: not shared with the process's other clients (grpc-js pools them by default). */
  constructor(address: string, { ownConnection = false }: { ownConnection?: boolean } = {}) {
    const Ctor = makeGenericClientConstructor(inferenceService(), 'GRPCInferenceService');
    this.client = new Ctor(
      address,
      credentials.createInsecure(),
      ownConnection ? { 'grpc.use_local_subchannel_pool': 1 } : {},
    ) as typeof this.client;
  }

  /** `deadlineMs`: the call's deadline from now (past it the client gives up, and the server is told). */
  call(
    method: string,
    request: Record<string, unknown>,
    headers: Record<string, string>,
    { deadlineMs }: { deadlineMs?: number } = {},
  ): Promise<GrpcResult> {
    return new Promise((resolve) => {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
      let header: Metadata | undefined;
      const done = (error: ServiceError | null, value: Record<string, unknown>): void =>
        resolve({ ...(error ? { error } : { value }), ...(header ? { header } : {}) });
      const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
      const pending = this.client[method]?.(request, metadata, options, done) as {
        on(e: 'metadata', f: (m: Metadata) => void): void;
      };
      pending.on('metadata', (m) => (header = m));
    });
  }

  /** A unary call with a message as bytes, framed however the test says. */
  callRaw(method: string, message: Buffer, headers: Record<string, string>): Promise<GrpcResult> {
    return new Promise((resolve) => {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
      this.client.makeUnaryRequest(
        `/inference.GRPCInferenceService/${method}`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        message,
        metadata,
        (error: ServiceError | null) => resolve(error ? { error } : { value: {} }),
      );
    });
  }

  /** A call whose message is sent and never closed, as a slow or stalled client would leave it. */
  stalled(method: string, message: Buffer, headers: Record<string, string>): Promise<GrpcResult> {
    return new Promise((resolve) => {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
      const stream = this.client.makeClientStreamRequest(
        `/inference.GRPCInferenceService/${method}`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        metadata,
        (error: ServiceError | null) => resolve(error ? { error } : { value: {} }),
      );
      stream.write(message);
    });
  }

  close(): void {
    this.client.close();
  }
}

/** [gRPC status, the code the message starts with, the code in the trailers]. */
export const refusal = (r: GrpcResult): Array<number | string | undefined> => [
  r.error?.code,
  r.error?.details.split(':')[0],
  r.error?.metadata.get('tollgate-code')[0]?.toString(),
];
