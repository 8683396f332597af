import type { Attributes } from '@opentelemetry/api';
import type { KeyGrant } from '../../common/resources/grant.js';
import type { Target } from '../admission/admission.js';

/**
 * What a call's span says of its key and target once the key is known: the key's id (never the
 * key), its owner, module and identity, and what it asked for. Attribute names are Tollgate's own
 * beside OpenTelemetry's HTTP and RPC conventions.
 */
export function callAttributes(grant: KeyGrant, target: Target): Attributes {
  return {
    'tollgate.key.id': grant.id,
    'tollgate.owner': grant.owner,
    'tollgate.module': grant.module,
    ...(grant.identity === undefined ? {} : { 'tollgate.identity': grant.identity.name }),
    'tollgate.target': targetName(target),
  };
}

function targetName(target: Target): string {
  switch (target.kind) {
    case 'workflow':
      return `workflow/${target.workflow}`;
    case 'platform':
      return `platform/${target.resource}`;
    case 'model':
      return `model/${target.model}`;
    case 'models':
      return 'models';
  }
}

/** A Redis round trip's span attributes (OpenTelemetry's database conventions). */
export const redisSpan = (operation: string): Attributes => ({
  'db.system.name': 'redis',
  'db.operation.name': operation,
});
