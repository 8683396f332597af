import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type Client,
  type ServiceError,
} from '@grpc/grpc-js';
import { inferenceService } from '../../gateway/grpc/protocol.js';

/** What one unary call got: its answer or its error, and the headers the server sent. */
export interface GrpcResult {
  error?: ServiceError;
  value?: Record<string, unknown>;
  header?: Metadata;
}

/** A plain gRPC client of the Open Inference Protocol's service, for what tritonclient never sends. */
export class InferenceClient {
  private readonly client: Client & Record<string, (...args: unknown[]) => unknown>;

  constructor(address: string) {
    const Ctor = makeGenericClientConstructor(inferenceService(), 'GRPCInferenceService');
    this.client = new Ctor(address, credentials.createInsecure()) as typeof this.client;
  }

  call(
    method: string,
    request: Record<string, unknown>,
    headers: Record<string, string>,
  ): Promise<GrpcResult> {
    return new Promise((resolve) => {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
      let header: Metadata | undefined;
      const done = (error: ServiceError | null, value: Record<string, unknown>): void =>
        resolve({ ...(error ? { error } : { value }), ...(header ? { header } : {}) });
      const pending = this.client[method]?.(request, metadata, done) as {
        on(e: 'metadata', f: (m: Metadata) => void): void;
      };
      pending.on('metadata', (m) => (header = m));
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
