import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Admission } from '../admission/admission.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { onCallEnd } from './call-end.js';

/** Requests whose call's slot another entry holds already (a gRPC call answered through REST). */
const heldElsewhere = new WeakSet<IncomingMessage>();

/** The gRPC entry holds its call's slot from its metadata to its end: the REST form takes none. */
export function slotHeldBy(req: IncomingMessage): void {
  heldElsewhere.add(req);
}

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
  if (heldElsewhere.has(req)) return;
  onCallEnd(req, res, admission.enter(grant));
}
