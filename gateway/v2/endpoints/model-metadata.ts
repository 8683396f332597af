import type { ModelTarget, V2Context, V2Endpoint } from '../endpoint.js';
import { expectMethod } from '../http.js';

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

/** GET /v2/models/<m>[/versions/<v>]: the metadata, served from the gateway's cache. */
export const modelMetadata: V2Endpoint<ModelTarget> = async (ctx, req, res, { model, version }) => {
  expectMethod(req, 'GET');
  const { grant, runtime } = await ctx.access.authorised(req, res, model, { version, split: false });
  const { raw } = await ctx.s.metadata.get(model, runtime, grant);
  const body = await withVersions(ctx, model, version, raw);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
  res.end(body);
};
