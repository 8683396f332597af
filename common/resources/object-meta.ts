import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';

/** The metadata fields Tollgate reads from any resource; the rest passes through untouched. */
export const objectMetaSchema = z
  .object({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    generation: z.int().optional(),
    creationTimestamp: z.union([z.iso.datetime({ offset: true }), z.date()]).optional(),
    deletionTimestamp: z.union([z.iso.datetime({ offset: true }), z.date()]).optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    finalizers: z.array(z.string()).optional(),
  })
  .loose();

/*
 * What the API server fills in, for the standalone stores of manifests that stand in for it, so
 * clients and controllers see the same bookkeeping in both modes.
 */

/** Now, at second precision, as the API server records a creation time. */
export const apiServerTimestamp = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The generation after a write: it moves only when the spec changed. */
export const nextGeneration = (generation: number | undefined, before: unknown, after: unknown): number =>
  isDeepStrictEqual(before, after) ? (generation ?? 1) : (generation ?? 1) + 1;

/** The resourceVersion after a write: it moves on every write. */
export const nextResourceVersion = (version: string | undefined): string =>
  String(Number(version ?? '1') + 1 || 1);

/**
 * The uid of a standalone manifest that names none (one written by hand): the same for a name
 * whatever reads it, the standalone operator or the Models page, so both keep its records under
 * one account. Models made through the platform API get a uid of their own, as the API server
 * gives one.
 */
export const manifestUid = (name: string): string => `manifest-${name}`;
