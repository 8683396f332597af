import type { z } from 'zod';
import { TollgateError, type ErrorCode } from '../../common/errors.js';

/**
 * Input validation at the edge of the management API: a zod failure becomes a 400 naming the field
 * at fault and what to send instead. Handlers receive typed values only.
 */
export function validate<S extends z.ZodType>(
  schema: S,
  input: unknown,
  where: 'body' | 'query' | 'path',
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue === undefined) throw new TollgateError('invalid_request', `the request ${where} is not valid`);
  if (issue.code === 'unrecognized_keys') {
    const field = [...issue.path, issue.keys[0] ?? ''].join('.');
    return reject('unknown_field', field, `${where} field "${field}" is not one this API accepts; remove it`);
  }
  // Fields are named without array indexes (`roles`, not `roles.1`); the message keeps the index.
  const field = issue.path.filter((p) => typeof p === 'string').join('.') || where;
  const at =
    issue.path.length === 0
      ? where
      : issue.path
          .map((p) => (typeof p === 'number' ? `[${p}]` : p))
          .join('.')
          .replace(/\.\[/g, '[');
  return reject('invalid_field', field, `${at}: ${issue.message}`);
}

function reject(code: ErrorCode, field: string, message: string): never {
  throw new TollgateError(code, message, { field });
}
