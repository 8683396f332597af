import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import { TollgateError } from '../../common/errors.js';
import type { Env } from '../../common/storage/s3-client.js';
import { parseStorageUri } from '../../common/storage/storage-uri.js';

/** The AWS variables to read a Model's storage with. */
export interface CredentialsResolver {
  envFor(namespace: string, secretName: string | undefined, storageUri: string): Promise<Env>;
}

/** The operator's own environment (standalone mode: one user, one machine, its own files). */
export class ProcessEnvCredentials implements CredentialsResolver {
  async envFor(): Promise<Env> {
    return process.env;
  }
}

/**
 * On a cluster, a Model's storage is read with its own namespace's credentials Secret and nothing
 * else: exactly what its puller gets as environment. The operator never lends a team its own
 * identity (its environment, its node's or service account's role) nor its own disk: a Model
 * without a Secret, a Secret without keys, or a file:// folder (a path on the operator's
 * filesystem) is refused with a condition saying what to fix. `fileStorage` is for tests whose
 * operator runs beside their folders.
 */
export class KubeSecretCredentials implements CredentialsResolver {
  private readonly api: CoreV1Api;
  constructor(
    kc: KubeConfig,
    private readonly opts: { fileStorage?: boolean } = {},
  ) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  async envFor(namespace: string, secretName: string | undefined, storageUri: string): Promise<Env> {
    if (parseStorageUri(storageUri).scheme === 'file') {
      if (this.opts.fileStorage) return {};
      throw new TollgateError(
        'storage_not_allowed',
        `storage URI "${storageUri}" names a folder on the operator's own disk, which Models on a cluster may not read; put the model folder in object storage (s3://<bucket>/<folder>)`,
        { field: 'storageUri' },
      );
    }
    if (secretName === undefined) {
      throw new TollgateError(
        'credentials_required',
        `a Model on a cluster reads its s3:// storage with a credentials Secret of its own namespace; create one with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_ENDPOINT_URL, AWS_REGION) and name it in spec.credentials.secretName`,
        { field: 'credentials.secretName' },
      );
    }
    let data: Record<string, string>;
    try {
      data = (await this.api.readNamespacedSecret({ namespace, name: secretName })).data ?? {};
    } catch (e) {
      if (isApiStatus(e, 404)) {
        throw new TollgateError(
          'credentials_not_found',
          `the credentials Secret "${secretName}" does not exist in namespace "${namespace}"; create it or fix spec.credentials.secretName`,
        );
      }
      throw e;
    }
    const env: Record<string, string> = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    // Without both keys the S3 client would fall back to the SDK's default chain: the operator's.
    const missing = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].filter((k) => !env[k]);
    if (missing.length > 0) {
      throw new TollgateError(
        'credentials_required',
        `the credentials Secret "${secretName}" in namespace "${namespace}" has no ${missing.join(' or ')}; add ${missing.length > 1 ? 'them' : 'it'}`,
        { field: 'credentials.secretName' },
      );
    }
    return env;
  }
}
