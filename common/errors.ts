/**
 * Errors are values with a stable `code`. Every layer throws or returns a TollgateError; exactly
 * one place (gateway/http/errors.ts) turns it into an HTTP answer, and the operator turns it into
 * a condition message. The status travels with the error so the mapping cannot drift.
 */
export type ErrorStatus =
  400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 431 | 500 | 502 | 503 | 504;

export class TollgateError extends Error {
  readonly code: string;
  readonly status: ErrorStatus;
  /** The request field at fault, for 400s. */
  readonly field: string | undefined;
  /** Extra response headers, e.g. Retry-After for 429, WWW-Authenticate for 401. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: ErrorStatus,
    code: string,
    message: string,
    opts: { field?: string; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'TollgateError';
    this.status = status;
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
