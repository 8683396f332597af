import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';
import { callerSchema } from '../views.js';
import type { ManagementRoute } from '../route.js';

/** GET /me: who the token says the caller is, and whether they are an administrator. */
function whoami(): RequestHandler {
  return (_req, res) => {
    const { subject, name, groups, admin } = callerOf(res);
    res.json({ subject, ...(name === undefined ? {} : { name }), groups, admin });
  };
}

export const whoamiRoute: ManagementRoute = {
  method: 'get',
  path: '/me',
  operationId: 'whoami',
  summary: 'Who your token says you are, and whether you are an administrator',
  ok: { status: 200, description: 'The caller', schema: callerSchema },
  errors: [401],
  handler: whoami,
};
