import type { V2Endpoint } from '../endpoint.js';
import { expectMethod, sendJson } from '../http.js';

/** GET /v2/models: the models this key may call, `{ models: [{ name, ready, versions, workflow? }] }`. */
export const listModels: V2Endpoint = async ({ access }, req, res, call) => {
  expectMethod(req, 'GET');
  const listed = await access.callableModels(await access.authenticate(req), call, '/v2/models');
  sendJson(res, 200, {
    models: listed.map((m) => ({
      name: m.name,
      ready: m.ready,
      versions: (m.versions ?? []).map((v) => v.name),
      ...(m.workflow === undefined ? {} : { workflow: m.workflow }),
    })),
  });
};
