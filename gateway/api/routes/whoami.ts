import type { RequestHandler } from 'express';
import { callerOf } from '../../auth/oidc.js';

/** GET /me: who the token says the caller is, and whether they are an administrator. */
export function whoami(): RequestHandler {
  return (_req, res) => {
    const { subject, name, groups, admin } = callerOf(res);
    res.json({ subject, ...(name === undefined ? {} : { name }), groups, admin });
  };
}
