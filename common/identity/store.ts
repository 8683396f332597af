import type { KubeConfig } from '@kubernetes/client-node';
import { TollgateError } from '../errors.js';
import {
  IDENTITY_GROUP,
  IDENTITY_PLURAL,
  IDENTITY_VERSION,
  identitySchema,
  type Identity,
} from '../resources/identity.js';
import type { ManifestDir } from '../resources/manifest-dir.js';
import { DirResourceStore } from '../stores/dir-resource-store.js';
import { KubeResourceStore } from '../stores/kube-resource-store.js';
import type { ResourceKind, ResourceStore } from '../stores/resource-store.js';

/** Where Identity resources live; owner checks are the caller's (gateway/api/identity-access.ts). */
export type IdentityStore = ResourceStore<Identity>;

const IDENTITY: ResourceKind = {
  kind: 'Identity',
  crdFile: 'crds/identities.yaml',
  exists: (name) =>
    new TollgateError('identity_exists', `an identity named "${name}" exists already; choose another name`, {
      field: 'name',
    }),
  changed: (name) =>
    new TollgateError(
      'identity_changed',
      `identity "${name}" was changed or deleted meanwhile; read it again and retry`,
    ),
};

/** Identities in the keys' namespace of the API server. */
export const kubeIdentityStore = (kc: KubeConfig, namespace: string): IdentityStore =>
  new KubeResourceStore(
    kc,
    { group: IDENTITY_GROUP, version: IDENTITY_VERSION, namespace, plural: IDENTITY_PLURAL },
    identitySchema,
    IDENTITY,
  );

/** Identity manifests in the standalone state directory (`<dir>/identities/<name>.yaml`). */
export const dirIdentityStore = (dir: ManifestDir): IdentityStore =>
  new DirResourceStore(dir, IDENTITY_PLURAL, identitySchema, IDENTITY);
