import type { V2EndpointSpec } from '../endpoint.js';
import { sendJson } from '../http.js';

/** GET /v2/models: the models this key may call, `{ models: [{ name, ready, versions, workflow? }] }`. */
export const listModels: V2EndpointSpec = {
  name: 'models',
  method: 'GET',
  path: ['models'],
  security: 'apikey',
  forModel: false,
  rest: async ({ access }, req, res, call) => {
    const listed = await access.callableModels(await access.authenticate(req), call, '/v2/models');
    sendJson(res, 200, {
      models: listed.map((m) => ({
        name: m.name,
        ready: m.ready,
        versions: (m.versions ?? []).map((v) => v.name),
        ...(m.workflow === undefined ? {} : { workflow: m.workflow }),
      })),
    });
  },
};
