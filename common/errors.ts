/**
 * Errors are values with a stable `code`. Every layer throws or returns a TollgateError naming
 * only its code; the table below is the one place a code gets its HTTP status (as in Unkey's
 * API), gateway/http/errors.ts turns an error into an HTTP answer, and the operator turns it into
 * a condition message. A code is added here before anything can throw it.
 */
export type ErrorStatus =
  400 | 401 | 403 | 404 | 405 | 408 | 409 | 410 | 413 | 415 | 417 | 422 | 429 | 431 | 500 | 502 | 503 | 504;

export const ERROR_STATUS = {
  // 400
  backslash_in_path: 400,
  bad_request: 400,
  batch_mismatch: 400,
  content_type_mismatch: 400,
  datatype_mismatch: 400,
  double_encoded_path: 400,
  duplicate_input: 400,
  empty_path_segment: 400,
  encoded_separator: 400,
  expiry_in_past: 400,
  file_too_large: 400,
  folder_too_large: 400,
  inference_error: 400,
  invalid_binary_data: 400,
  invalid_base64: 400,
  invalid_config: 400,
  invalid_content_type: 400,
  invalid_cursor: 400,
  invalid_data: 400,
  invalid_datatype: 400,
  invalid_field: 400,
  invalid_identifier: 400,
  invalid_inference_request: 400,
  invalid_input: 400,
  invalid_json: 400,
  invalid_model: 400,
  invalid_path: 400,
  invalid_path_encoding: 400,
  invalid_request: 400,
  invalid_shape: 400,
  invalid_storage_uri: 400,
  method_override: 400,
  storage_not_allowed: 400,
  credentials_required: 400,
  credentials_not_allowed: 400,
  missing_content_type: 400,
  missing_original_request: 400,
  conflicting_original_request: 400,
  missing_data: 400,
  missing_input: 400,
  missing_inputs: 400,
  model_rejected_input: 400,
  path_traversal: 400,
  ragged_data: 400,
  read_only_field: 400,
  shape_data_mismatch: 400,
  shape_mismatch: 400,
  unknown_field: 400,
  unknown_input: 400,
  unknown_role: 400,
  unknown_workflow: 400,
  // 401
  empty_api_key: 401,
  expired_api_key: 401,
  invalid_auth_scheme: 401,
  invalid_grant: 401,
  invalid_report_signature: 401,
  invalid_key_checksum: 401,
  invalid_token: 401,
  malformed_api_key: 401,
  malformed_authorization: 401,
  missing_api_key: 401,
  missing_token: 401,
  rolled_api_key: 401,
  token_expired: 401,
  token_revoked: 401,
  unknown_api_key: 401,
  // 403
  admin_required: 403,
  access_denied: 403,
  address_not_allowed: 403,
  model_access_denied: 403,
  model_not_in_key_scope: 403,
  priced_per_row: 403,
  model_not_owned: 403,
  credits_counted_centrally: 403,
  identity_missing: 403,
  identity_not_owned: 403,
  module_mismatch: 403,
  credentials_not_readable: 403,
  role_not_allowed: 403,
  workflow_not_allowed: 403,
  workflow_not_owned: 403,
  // 404
  credentials_not_found: 404,
  empty_prefix: 404,
  identity_not_found: 404,
  webhook_not_found: 404,
  delivery_not_found: 404,
  key_not_found: 404,
  model_not_found: 404,
  model_version_not_found: 404,
  no_such_bucket: 404,
  no_such_folder: 404,
  object_vanished: 404,
  unknown_endpoint: 404,
  unknown_model: 404,
  unknown_resource: 404,
  unknown_service: 404,
  usage_export_off: 404,
  // 405
  method_not_allowed: 405,
  // 408
  request_timeout: 408,
  // 409
  identity_exists: 409,
  key_exists: 409,
  owner_offboarded: 409,
  delivery_pending: 409,
  identity_in_use: 409,
  identity_changed: 409,
  key_already_rolled: 409,
  webhook_changed: 409,
  too_many_webhooks: 409,
  too_many_identities: 409,
  too_many_keys: 409,
  key_changed: 409,
  key_expired: 409,
  model_conflict: 409,
  model_exists: 409,
  workflow_owned_by_another_user: 409,
  // 410
  usage_cursor_expired: 410,
  // 413
  body_too_large: 413,
  // 415
  unsupported_media_type: 415,
  // 417
  expectation_failed: 417,
  // 429
  rate_limited: 429,
  too_many_calls: 429,
  credits_exhausted: 429,
  // 431
  headers_too_large: 431,
  // 500
  destination_not_writable: 500,
  disk_full: 500,
  internal_error: 500,
  pull_failed: 500,
  // 502
  model_answer_too_large: 502,
  model_failed: 502,
  model_metadata_unavailable: 502,
  size_mismatch: 502,
  upstream_connection_failed: 502,
  // 503
  audit_not_configured: 503,
  audit_store_unavailable: 503,
  grant_signer_unavailable: 503,
  identity_provider_unavailable: 503,
  index_rebuilding: 503,
  key_store_unavailable: 503,
  model_directory_unavailable: 503,
  model_not_ready: 503,
  model_scaling_up: 503,
  model_store_unavailable: 503,
  redis_unavailable: 503,
  shutting_down: 503,
  gateway_busy: 503,
  storage_unavailable: 503,
  upstream_unavailable: 503,
  // 504
  upstream_timeout: 504,
} as const satisfies Record<string, ErrorStatus>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class TollgateError extends Error {
  readonly code: ErrorCode;
  readonly status: ErrorStatus;
  /** The request field at fault, for 400s. */
  readonly field: string | undefined;
  /** Extra response headers, e.g. Retry-After for 429, WWW-Authenticate for 401. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { field?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'TollgateError';
    this.status = ERROR_STATUS[code];
    this.code = code;
    this.field = opts.field;
    this.headers = opts.headers ?? {};
  }

  toJSON(): { error: string; code: string; field?: string } {
    return this.field === undefined
      ? { error: this.message, code: this.code }
      : { error: this.message, code: this.code, field: this.field };
  }
}

export const isTollgateError = (e: unknown): e is TollgateError => e instanceof TollgateError;
