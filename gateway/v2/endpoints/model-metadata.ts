import type { KeyGrant } from '../../../common/resources/grant.js';
import { MODEL, type ModelTarget, type V2Context, type V2EndpointSpec } from '../endpoint.js';
import { modelMetadataSchema } from '../metadata.js';

/**
 * A versioned model's metadata as its runtime gave it, with `versions` filled in (MLServer leaves
 * it empty): the version asked for, or on the unversioned path every version ready now.
 */
async function withVersions(
  ctx: V2Context,
  model: string,
  version: string | undefined,
  raw: Buffer,
): Promise<Buffer> {
  const listed =
    version === undefined ? (await ctx.access.modelRoute(model))?.versions?.map((v) => v.name) : [version];
  if (listed === undefined) return raw;
  const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  return Buffer.from(JSON.stringify({ ...parsed, versions: listed }));
}

/** A model's metadata (JSON) for a caller its grant admits, served from the gateway's cache. */
export async function modelMetadataOf(
  ctx: V2Context,
  grant: KeyGrant,
  { model, version, call }: ModelTarget,
): Promise<Buffer> {
  const { runtime } = await ctx.access.authorised(grant, call, model, { version, split: false });
  const { raw } = await ctx.s.metadata.get(model, runtime, grant);
  return withVersions(ctx, model, version, raw);
}

/** GET /v2/models/<m>[/versions/<v>]: the metadata. */
export const modelMetadata: V2EndpointSpec = {
  name: 'model-metadata',
  method: 'GET',
  path: ['models', MODEL],
  security: 'apikey',
  grpc: 'ModelMetadata',
  underWorkflow: 'runtime',
  forModel: true,
  rest: async (ctx, req, res, target) => {
    const body = await modelMetadataOf(ctx, await ctx.access.authenticate(req), target);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
    res.end(body);
  },
  openapi: {
    operationId: 'v2ModelMetadata',
    summary: 'A model’s metadata, as its runtime declares it',
    ok: { status: 200, description: 'Metadata', schema: modelMetadataSchema },
    errors: [401, 403, 404, 429, 502, 503, 504],
  },
};
