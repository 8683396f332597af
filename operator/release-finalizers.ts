import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { isApiStatus } from '../common/kube/custom-objects.js';
import {
  API_KEY_FINALIZER,
  API_KEY_GROUP,
  API_KEY_PLURAL,
  API_KEY_VERSION,
} from '../common/resources/apikey.js';
import { MODEL_GROUP, MODEL_PLURAL, MODEL_VERSION } from '../common/resources/model.js';
import { MODEL_FINALIZER } from './controllers/model/reconciler.js';
import { KubeRouteHold } from './route-hold.js';

/** What a release took off, and what it could not (with why). */
export interface Released {
  released: string[];
  failed: string[];
}

interface Finalized {
  metadata?: { name?: string; namespace?: string; finalizers?: string[]; resourceVersion?: string };
}

const PAGE = 500;

/**
 * Takes off every finalizer the operator puts on, once no operator is left to (`helm uninstall`
 * runs it as a hook): the route finalizer of Services, and the ones of Models (their routes) and
 * ApiKeys (their index entries). Left on, a team's namespace holding one of them, or the CRDs,
 * would stay Terminating for ever. Other controllers' finalizers stay.
 */
export async function releaseFinalizers(kc: KubeConfig, namespace?: string): Promise<Released> {
  const services = await new KubeRouteHold(kc).releaseAll(namespace);
  const api = kc.makeApiClient(CustomObjectsApi);
  const models = await releaseKind(
    api,
    { group: MODEL_GROUP, version: MODEL_VERSION, plural: MODEL_PLURAL },
    MODEL_FINALIZER,
    namespace,
  );
  const keys = await releaseKind(
    api,
    { group: API_KEY_GROUP, version: API_KEY_VERSION, plural: API_KEY_PLURAL },
    API_KEY_FINALIZER,
    namespace,
  );
  return {
    released: [
      ...services.released.map((s) => `service ${s}`),
      ...models.released.map((m) => `model ${m}`),
      ...keys.released.map((k) => `apikey ${k}`),
    ],
    failed: [...services.failed, ...models.failed, ...keys.failed],
  };
}

async function releaseKind(
  api: CustomObjectsApi,
  kind: { group: string; version: string; plural: string },
  finalizer: string,
  namespace: string | undefined,
): Promise<Released> {
  const out: Released = { released: [], failed: [] };
  let next: string | undefined;
  do {
    const page = { ...kind, limit: PAGE, ...(next === undefined ? {} : { _continue: next }) };
    const list = (
      namespace === undefined
        ? await api.listClusterCustomObject(page)
        : await api.listNamespacedCustomObject({ ...page, namespace })
    ) as { items?: Finalized[]; metadata?: { continue?: string } };
    for (const item of list.items ?? []) {
      if (!(item.metadata?.finalizers ?? []).includes(finalizer)) continue;
      const ref = { namespace: item.metadata?.namespace ?? '', name: item.metadata?.name ?? '' };
      try {
        await takeOff(api, kind, ref, finalizer, item);
        out.released.push(`${ref.namespace}/${ref.name}`);
      } catch (e) {
        out.failed.push(
          `${kind.plural} ${ref.namespace}/${ref.name}: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    }
    next = list.metadata?.continue || undefined;
  } while (next !== undefined);
  return out;
}

/** The finalizer off `seen`; a copy changed meanwhile (409) is read again and tried once more. */
async function takeOff(
  api: CustomObjectsApi,
  kind: { group: string; version: string; plural: string },
  ref: { namespace: string; name: string },
  finalizer: string,
  seen: Finalized,
): Promise<void> {
  let current: Finalized | undefined = seen;
  for (let attempt = 0; attempt < 3; attempt++) {
    // Gone, or its finalizer taken off meanwhile: nothing left to do.
    if (current === undefined || !(current.metadata?.finalizers ?? []).includes(finalizer)) return;
    const finalizers = (current.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
    const body = { metadata: { finalizers, resourceVersion: current.metadata?.resourceVersion } };
    try {
      await api.patchNamespacedCustomObject(
        { ...kind, ...ref, body },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      return;
    } catch (e) {
      if (isApiStatus(e, 404)) return;
      if (!isApiStatus(e, 409)) throw e;
      current = (await api.getNamespacedCustomObject({ ...kind, ...ref }).catch((err: unknown) => {
        if (isApiStatus(err, 404)) return undefined;
        throw err;
      })) as Finalized | undefined;
    }
  }
  throw new Error('changed on every try; run it again');
}
