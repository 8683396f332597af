import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import { isTollgateError, TollgateError } from '../../common/errors.js';
import { MODEL_CREDENTIALS_LABEL, MODEL_OWNERS_ANNOTATION } from '../../common/resources/labels.js';
import { internalAddress } from '../../common/net/internal-address.js';
import type { Env } from '../../common/storage/s3-client.js';
import { parseStorageUri } from '../../common/storage/storage-uri.js';

/** The AWS variables to read a Model's storage with. */
export interface CredentialsResolver {
  /** `owner`: the Model's OWNER_KEY annotation, which a Secret in Tollgate's namespace may require. */
  envFor(namespace: string, secretName: string | undefined, storageUri: string, owner?: string): Promise<Env>;
  /**
   * Addresses the operator's own calls to a Model's store may not reach, checked when each
   * connection is made (a name that resolved to the store when checked may resolve elsewhere later).
   */
  readonly refusedAddress?: (address: string) => boolean;
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
 * filesystem) is refused with a condition saying what to fix, and so is an endpoint on the
 * operator's own machine or the cloud's metadata service (the operator's requests would go there
 * from its position). `sameMachine` is for tests whose operator runs beside their folders and
 * their object store.
 */
export class KubeSecretCredentials implements CredentialsResolver {
  private readonly api: CoreV1Api;
  readonly refusedAddress: ((address: string) => boolean) | undefined;

  constructor(
    kc: KubeConfig,
    private readonly opts: {
      sameMachine?: boolean;
      /**
       * Tollgate's own namespace, where the platform API puts the Models it makes: it also holds
       * Tollgate's Secrets (Redis passwords, the audit store's keys), so a Model there may name only
       * a Secret an administrator labelled MODEL_CREDENTIALS_LABEL=true, and, when the Secret
       * lists owners (MODEL_OWNERS_ANNOTATION), only a Model of one of them.
       */
      ownNamespace?: string;
    } = {},
  ) {
    this.api = kc.makeApiClient(CoreV1Api);
    this.refusedAddress = opts.sameMachine ? undefined : internalAddress;
  }

  async envFor(
    namespace: string,
    secretName: string | undefined,
    storageUri: string,
    owner?: string,
  ): Promise<Env> {
    if (parseStorageUri(storageUri).scheme === 'file') {
      if (this.opts.sameMachine) return {};
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
      const secret = await this.api.readNamespacedSecret({ namespace, name: secretName });
      if (namespace === this.opts.ownNamespace) checkSharedSecret(secret.metadata, secretName, owner);
      data = secret.data ?? {};
    } catch (e) {
      if (isTollgateError(e)) throw e;
      if (isApiStatus(e, 404)) {
        throw new TollgateError(
          'credentials_not_found',
          `the credentials Secret "${secretName}" does not exist in namespace "${namespace}"; create it or fix spec.credentials.secretName`,
        );
      }
      // The Model's author cannot fix it, but must be told: nothing else would say why it waits.
      if (isApiStatus(e, 403)) {
        throw new TollgateError(
          'credentials_not_readable',
          `the operator may not read Secrets in namespace "${namespace}" (the chart's rbac.readSecrets is false, or a policy forbids it), so it cannot read "${secretName}"; ask the cluster's administrators`,
          { field: 'credentials.secretName' },
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
    if (!this.opts.sameMachine) await refuseInternalEndpoint(env, secretName);
    return env;
  }
}

/**
 * A Secret in Tollgate's own namespace, named by a Model there: labelled for Models by an
 * administrator, and, if it lists owners, named by a Model of one of them.
 */
function checkSharedSecret(
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined,
  secretName: string,
  owner: string | undefined,
): void {
  if (metadata?.labels?.[MODEL_CREDENTIALS_LABEL] !== 'true') {
    throw new TollgateError(
      'credentials_not_allowed',
      `the Secret "${secretName}" is in Tollgate's own namespace, where a Model may name only a Secret an administrator labelled ${MODEL_CREDENTIALS_LABEL}=true; ask one to label it, or to make another`,
      { field: 'credentials.secretName' },
    );
  }
  const owners = metadata.annotations?.[MODEL_OWNERS_ANNOTATION];
  if (owners === undefined) return;
  const allowed = owners
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (owner === undefined || !allowed.includes(owner)) {
    throw new TollgateError(
      'credentials_not_allowed',
      `the Secret "${secretName}" is for the Models of the owners its ${MODEL_OWNERS_ANNOTATION} annotation lists, and this Model's owner is not one of them; name a Secret of your own, or ask an administrator to add you`,
      { field: 'credentials.secretName' },
    );
  }
}

async function refuseInternalEndpoint(env: Record<string, string>, secretName: string): Promise<void> {
  const raw = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (raw === undefined || raw === '') return;
  const refuse = (why: string) =>
    new TollgateError(
      'storage_not_allowed',
      `the endpoint ${raw} in the credentials Secret "${secretName}" ${why}; give the object store's own address`,
      { field: 'credentials.secretName' },
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('is not http:// or https://');
  // Virtual-hosted addressing would put the bucket name into the host the operator calls
  // (`<bucket>.<endpoint>`), a host this check never saw: with an endpoint, path style only.
  const pathStyle = env.AWS_S3_FORCE_PATH_STYLE;
  if (pathStyle !== undefined && pathStyle !== 'true') {
    throw refuse(
      'comes with AWS_S3_FORCE_PATH_STYLE other than "true"; remove it (a custom endpoint is called path-style)',
    );
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    throw refuse(`does not resolve (${host})`);
  }
  const bad = addresses.find(internalAddress);
  if (bad !== undefined) {
    throw refuse(
      `is ${bad}: the operator's own machine or a metadata service, which a Model may not send it to`,
    );
  }
}
