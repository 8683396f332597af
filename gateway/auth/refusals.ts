import type { CallHead } from '../http/call-head.js';
import { isTollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { countedUpstream } from './signed-grant.js';
import type { Metered } from '../usage-export/meter.js';

/**
 * Where refusals of existing keys go: the audit trail and the key's usage figures (and, with the
 * call's target once it is known, its usage for export).
 */
export type RefusalSink = (grant: KeyGrant, code: string, req: CallHead, metered?: Metered) => void;

/**
 * A call refused after its key was found (a role or workflow it may not use, its rate limit) is a
 * key event. A grant the central gateway signed was accounted for there.
 */
export function noteRefusal(
  sink: RefusalSink,
  grant: KeyGrant,
  err: unknown,
  req: CallHead,
  metered?: Metered,
): void {
  if (!isTollgateError(err) || (err.status !== 403 && err.status !== 429)) return;
  if (countedUpstream(grant)) return;
  sink(grant, err.code, req, metered);
}
