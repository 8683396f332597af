import { z } from 'zod';
import type { ModelSpec } from './generated/models.js';

/**
 * A cohort: the callers a version serves (spec.traffic[].cohort, spec.rollout.cohort) or whose
 * calls a shadow copies (spec.shadow.cohort). By caller, never by call: a customer sees one
 * version, call after call, which a percentage of calls cannot promise.
 */
export type Cohort = NonNullable<NonNullable<ModelSpec['rollout']>['cohort']>;

/**
 * A cohort as a route carries it to the gateways: `salt` makes each version's share of the other
 * callers its own draw (a caller in one canary's 10% is not therefore in the next one's).
 */
export const routeCohortSchema = z.object({
  identities: z.array(z.string().min(1)).max(50).optional(),
  keys: z.array(z.string().min(1)).max(50).optional(),
  percent: z.int().min(0).max(100).optional(),
  salt: z.string().min(1).max(300),
});
export type RouteCohort = z.infer<typeof routeCohortSchema>;

/** The cohort of a model's version, as its route names it. */
export const routeCohort = (cohort: Cohort, model: string, version: string): RouteCohort => ({
  ...(cohort.identities?.length ? { identities: [...cohort.identities] } : {}),
  ...(cohort.keys?.length ? { keys: [...cohort.keys] } : {}),
  ...(cohort.percent ? { percent: cohort.percent } : {}),
  salt: `${model}/${version}`,
});

/** Whether a cohort names anyone: one that does not would serve no caller, which is a mistake. */
export const cohortIsEmpty = (cohort: Cohort): boolean =>
  (cohort.identities?.length ?? 0) === 0 && (cohort.keys?.length ?? 0) === 0 && (cohort.percent ?? 0) === 0;

/** The cohort in words, for status, conditions and Events: who, so an operator can tell. */
export function describeCohort(cohort: Cohort): string {
  const few = (names: readonly string[]) =>
    names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;
  const parts = [
    ...(cohort.identities?.length ? [`identities ${few(cohort.identities)}`] : []),
    ...(cohort.keys?.length ? [`keys ${few(cohort.keys)}`] : []),
    ...(cohort.percent ? [`${cohort.percent}% of the other callers`] : []),
  ];
  return parts.length === 0 ? 'no caller' : parts.join('; ');
}
