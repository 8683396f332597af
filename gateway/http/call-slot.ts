import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Admission } from '../admission/admission.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { onCallEnd } from './call-end.js';

/**
 * Takes one of the key owner's calls in flight for this REST call (admission.enter), given back
 * when the call ends, however it ends (call-end.ts); throws the refusal past the owner's share.
 */
export function enterCall(
  admission: Pick<Admission, 'enter'>,
  grant: KeyGrant,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  onCallEnd(req, res, admission.enter(grant));
}
