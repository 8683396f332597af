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
