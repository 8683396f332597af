import { z } from 'zod';

/** Setting types more than one group of settings uses. */

export const resourceName = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,62}$/, 'a resource name is lower-case letters, digits and dashes');
export const httpUrl = z.url({ protocol: /^https?$/ });

/**
 * A list setting: an array in the config file, or `a,b,c` in an environment variable (each entry
 * read by `fromText`); each item checked by `item`.
 */
export function listOf<T extends z.ZodType>(item: T, fromText: (text: string) => unknown = (t) => t) {
  return z
    .union([
      z.array(z.unknown()),
      z.string().transform((list) =>
        list
          .split(',')
          .map((c) => c.trim())
          .filter((c) => c !== '')
          .map(fromText),
      ),
    ])
    .pipe(z.array(item));
}
