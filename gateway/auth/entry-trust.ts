import { openKeyFile } from '../../common/crypto/key-file.js';
import { TollgateError } from '../../common/errors.js';
import { CENTRAL_SCOPE, reportKey, type ReportSigner } from '../../common/redis/load-reports.js';
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
  /** How its load reports are signed; absent in a sidecar given no report key (it reports none). */
  reports: ReportSigner | undefined;
}

export async function loadEntryTrust(
  config: Pick<GatewayConfig, 'grantSigningKeyFile' | 'trustedKeys' | 'reportKey'>,
): Promise<EntryTrust> {
  if (config.grantSigningKeyFile !== undefined) {
    const key = await openKeyFile(config.grantSigningKeyFile);
    return {
      verifier: EntryVerifier.forKey(key),
      sealer: new EntrySealer(key),
      reports: { scope: CENTRAL_SCOPE, key: reportKey(key, CENTRAL_SCOPE) },
    };
  }
  if (config.trustedKeys !== undefined) {
    const dot = config.reportKey?.lastIndexOf('.') ?? -1;
    const reports =
      config.reportKey === undefined
        ? undefined
        : {
            scope: config.reportKey.slice(0, dot),
            key: Buffer.from(config.reportKey.slice(dot + 1), 'base64url'),
          };
    try {
      return {
        verifier: new EntryVerifier(parseTrustedKeys(config.trustedKeys)),
        sealer: undefined,
        reports,
      };
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
