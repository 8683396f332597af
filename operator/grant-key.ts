import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isApiStatus } from '../common/kube/custom-objects.js';
import { generateStoredKey, storedKeySchema, type StoredKey } from '../common/crypto/key-file.js';

/**
 * The central gateways' grant signing key on a cluster: an ES256 JWK in a Secret of the
 * operator's namespace (`key.json`), made by the first operator replica that finds none. The
 * gateway pods mount the Secret; the operator publishes the public half in Redis for the sidecars
 * (common/redis/grant-keys.ts). Kubernetes is its source of truth: a Redis flush loses nothing.
 */
export const GRANT_KEY_FILE = 'key.json';

export function grantKeySecret(kc: KubeConfig, namespace: string, name: string): () => Promise<StoredKey> {
  const core = kc.makeApiClient(CoreV1Api);
  const read = async (): Promise<StoredKey | undefined> => {
    try {
      const secret = await core.readNamespacedSecret({ namespace, name });
      const raw = secret.data?.[GRANT_KEY_FILE];
      if (raw === undefined) throw new Error(`Secret ${namespace}/${name} has no ${GRANT_KEY_FILE}`);
      return storedKeySchema.parse(JSON.parse(Buffer.from(raw, 'base64').toString('utf8')));
    } catch (err) {
      if (isApiStatus(err, 404)) return undefined;
      throw err;
    }
  };
  return async () => {
    const found = await read();
    if (found !== undefined) return found;
    const key = await generateStoredKey();
    try {
      await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: {
            name,
            labels: {
              'app.kubernetes.io/managed-by': 'tollgate',
              'app.kubernetes.io/component': 'grant-key',
            },
          },
          type: 'Opaque',
          data: { [GRANT_KEY_FILE]: Buffer.from(JSON.stringify(key)).toString('base64') },
        },
      });
      return key;
    } catch (err) {
      // Another replica made it first: theirs is the key.
      if (!isApiStatus(err, 409)) throw err;
      const theirs = await read();
      if (theirs === undefined) throw err;
      return theirs;
    }
  };
}
