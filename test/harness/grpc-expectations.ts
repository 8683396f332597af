import { expect } from '@jest/globals';

/**
 * What tritonclient.grpc gets for each call the script makes wrong, as gRPC statuses with the
 * gateway's codes first in their messages (and, with a version, for one the model does not have).
 */
export function tritonGrpcRefusals(withVersion: boolean): Record<string, unknown> {
  const status = (code: string, error: RegExp) => ({
    status: `StatusCode.${code}`,
    message: expect.stringMatching(error),
  });
  return {
    no_key: status('UNAUTHENTICATED', /^missing_api_key: /),
    unknown_key: status('UNAUTHENTICATED', /^(unknown|malformed)_api_key: /),
    no_model: status('NOT_FOUND', /^model_not_found: /),
    shape: status('INVALID_ARGUMENT', /^shape_mismatch: .*features/),
    datatype: status('INVALID_ARGUMENT', /^datatype_mismatch: /),
    metadata_no_key: status('UNAUTHENTICATED', /^missing_api_key: /),
    ...(withVersion ? { no_version: status('NOT_FOUND', /^model_version_not_found: /) } : {}),
  };
}
