import type { CallHead } from '../http/call-head.js';
import type { KeyGrant } from '../../common/resources/grant.js';

/**
 * Who is calling, for both entries (/events and /v2): the key check, or (a sidecar) a grant the
 * central gateway signed. Synchronous when the key's cache holds it.
 */
export type Authenticate = (req: CallHead) => KeyGrant | Promise<KeyGrant>;
