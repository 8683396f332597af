import type { TollgateError } from '../../common/errors.js';

/** The error `p` is refused with; a test fails if it resolves instead. */
export const refusal = (p: Promise<unknown>): Promise<TollgateError> =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: TollgateError) => e,
  );
