import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import { TollgateError } from '../../common/errors.js';
import type { Env } from '../../common/storage/s3-client.js';

/** The AWS variables to read a Model's storage with. */
export interface CredentialsResolver {
  envFor(namespace: string, secretName: string | undefined): Promise<Env>;
}

/** The operator's own environment (standalone mode, or Models without a credentials Secret). */
export class ProcessEnvCredentials implements CredentialsResolver {
  async envFor(): Promise<Env> {
    return process.env;
  }
}

/**
 * A Model's credentials Secret (the same one its puller gets as environment), over the operator's
 * own AWS variables (e.g. a cluster-wide AWS_ENDPOINT_URL).
 */
export class KubeSecretCredentials implements CredentialsResolver {
  private readonly api: CoreV1Api;
  constructor(kc: KubeConfig) {
    this.api = kc.makeApiClient(CoreV1Api);
  }

  async envFor(namespace: string, secretName: string | undefined): Promise<Env> {
    if (secretName === undefined) return process.env;
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
    const decoded = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    return { ...process.env, ...decoded };
  }
}
