import { z } from 'zod';
import { V2_DATATYPES } from '../../common/model-settings/types.js';

/**
 * A model's V2 metadata as the runtime reports it on GET /v2/models/<name>. Parsed at the edge,
 * when the gateway fetches it, so the validator works on typed values. MLServer sends `null` for
 * what the settings file leaves out, hence the nullish fields.
 */

const parameters = z
  .looseObject({ content_type: z.string().nullish() })
  .nullish()
  .transform((p) => (p?.content_type ? { content_type: p.content_type } : {}));

const tensorMetadata = z.object({
  name: z.string(),
  datatype: z.enum(V2_DATATYPES),
  // A request may have at most 32 dimensions (validate-infer.ts); more is no model's.
  shape: z.array(z.number().int()).max(64),
  parameters,
});

export const modelMetadataSchema = z.object({
  name: z.string(),
  versions: z.array(z.string()).nullish(),
  platform: z.string().nullish(),
  inputs: z
    .array(tensorMetadata)
    .nullish()
    .transform((t) => t ?? []),
  outputs: z
    .array(tensorMetadata)
    .nullish()
    .transform((t) => t ?? []),
  parameters,
});

export type TensorMetadata = z.infer<typeof tensorMetadata>;
export type ModelMetadata = z.infer<typeof modelMetadataSchema>;
