import { openKeyFile } from '../../common/crypto/key-file.js';
import { TollgateError } from '../../common/errors.js';
import { EntrySealer, EntryVerifier, parseTrustedKeys } from '../../common/redis/sealed-entry.js';
import type { GatewayConfig } from '../config.js';

/**
 * What this gateway believes in Redis, and whether it may write: a central gateway holds the
 * signing key (it seals the entries its management API writes), a sidecar only the public keys.
 */
export interface EntryTrust {
  verifier: EntryVerifier;
  /** Absent in a sidecar: it never writes the index. */
  sealer: EntrySealer | undefined;
}

export async function loadEntryTrust(
  config: Pick<GatewayConfig, 'grantSigningKeyFile' | 'trustedKeys'>,
): Promise<EntryTrust> {
  if (config.grantSigningKeyFile !== undefined) {
    const key = await openKeyFile(config.grantSigningKeyFile);
    return { verifier: EntryVerifier.forKey(key), sealer: new EntrySealer(key) };
  }
  if (config.trustedKeys !== undefined) {
    try {
      return { verifier: new EntryVerifier(parseTrustedKeys(config.trustedKeys)), sealer: undefined };
    } catch (err) {
      throw new TollgateError('invalid_config', `gateway setting trustedKeys: ${(err as Error).message}`, {
        field: 'trustedKeys',
      });
    }
  }
  throw new TollgateError(
    'invalid_config',
    'gateway setting grantSigningKeyFile or trustedKeys: a gateway believes only what the operator signed; give a central gateway the signing key file (TOLLGATE_GRANT_SIGNING_KEY_FILE) and a sidecar the public keys (TOLLGATE_TRUSTED_KEYS)',
    { field: 'grantSigningKeyFile' },
  );
}
