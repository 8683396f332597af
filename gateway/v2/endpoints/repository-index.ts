import { TollgateError } from '../../../common/errors.js';
import type { V2EndpointSpec } from '../endpoint.js';
import { checkContentType, sendJson } from '../http.js';
import { readBody } from '../../http/read-body.js';

/** `{}` or `{"ready": true}`: whether to list only ready models. */
function readyOnly(raw: string): boolean {
  if (raw === '') return false;
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new TollgateError('invalid_json', 'the body is not JSON; send {} or {"ready": true}', {
      field: 'body',
    });
  }
  const ready = (body as { ready?: unknown } | null)?.ready;
  if (
    typeof body !== 'object' ||
    body === null ||
    Array.isArray(body) ||
    (ready !== undefined && typeof ready !== 'boolean')
  ) {
    throw new TollgateError('invalid_request', 'send {} or {"ready": true}', { field: 'ready' });
  }
  return ready === true;
}

/**
 * POST /v2/repository/index, as MLServer and Triton answer it: `[{ name, version, state, reason }]`,
 * `{"ready": true}` in the body to list only ready models.
 */
export const repositoryIndex: V2EndpointSpec = {
  name: 'repository-index',
  method: 'POST',
  path: ['repository', 'index'],
  security: 'apikey',
  forModel: false,
  rest: async ({ access }, req, res, call) => {
    checkContentType(req);
    const only = readyOnly((await readBody(req, 4096)).toString('utf8').trim());
    const listed = await access.callableModels(await access.authenticate(req), call, '/v2/models');
    // One entry per version, as MLServer lists a model's versions.
    const entries = listed.flatMap((m) =>
      (m.versions ?? [{ name: '', ready: m.ready }]).map((v) => ({
        name: m.name,
        version: v.name,
        ready: v.ready,
      })),
    );
    sendJson(
      res,
      200,
      entries
        .filter((e) => !only || e.ready)
        .map((e) => ({
          name: e.name,
          version: e.version,
          state: e.ready ? 'READY' : 'UNAVAILABLE',
          reason: e.ready ? '' : 'no ready replica yet',
        })),
    );
  },
};
