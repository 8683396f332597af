import { SERVER, type Metered } from '../usage-export/meter.js';
import { noteOnCall } from '../../common/tracing/call-trace.js';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { isModelName } from '../../common/resources/model-name.js';
import { enforce, type Admission, type RowCharge, type Target } from '../admission/admission.js';
import { noteRefusal, type RefusalSink } from '../auth/refusals.js';
import type { Activator } from './activator.js';
import type { Authenticate } from '../auth/authenticate.js';
import { noteModule } from '../http/call-module.js';
import type { CallHead } from '../http/call-head.js';
import type { RuntimeAddress } from '../routing/route-table.js';
import type { GatewayServices } from '../services.js';
import { warmed, type ModelRouteLookup } from './activation.js';
import { callerOf } from './cohort.js';
import type { V2Call } from './endpoint.js';
import type { ModelDirectory, ModelInfo } from './model-directory.js';
import { checkVersionExists, chooseVersion, notReady, type Chosen, type VersionWanted } from './versions.js';

/**
 * What differs between the placements: who the caller is, and where a model's runtime answers.
 * The central gateway checks keys and reads the route table; a model's sidecar also takes the
 * grants the central gateway signed, and knows one runtime, its pod's (gateway/sidecar/).
 */
export interface V2Placement {
  authenticate: Authenticate;
  modelRoute: ModelRouteLookup;
}

export const centralPlacement = (s: GatewayServices): V2Placement => ({
  authenticate: (req) => s.keys.check(req),
  modelRoute: (name, recheck) => s.routes.model(name, recheck),
});

/** A call let through to a model's runtime; `perRow`: its price, spent once its batch is known. */
export interface Authorised {
  runtime: RuntimeAddress;
  perRow?: RowCharge;
}

/** What the access checks use of the gateway's services (a unit test passes fakes). */
export interface AccessServices {
  /** Who may call which model, at what price (admission/admission.ts). */
  admission: Pick<Admission, 'scope' | 'claim' | 'lists' | 'price' | 'spend'>;
  refused: RefusalSink;
  activator: Pick<Activator, 'hold' | 'firstReady'>;
}

export interface ModelVersionState {
  name: string;
  ready: boolean;
}

export interface CallableModel {
  name: string;
  workflow: string | undefined;
  ready: boolean;
  versions?: ModelVersionState[];
}

/**
 * Where a V2 call goes, once the admission core (admission/admission.ts) has let its key make it:
 * the model and version, and (for a model scaled to zero) the wait for a replica. Every check that
 * can refuse a call runs before the wait: a key over its limit must not wake a model.
 */
export class ModelAccess {
  constructor(
    private readonly s: AccessServices,
    private readonly models: ModelDirectory,
    private readonly placement: V2Placement,
  ) {}

  /** The caller's grant, noted on the call for the request metric's module label. */
  async authenticate(head: CallHead): Promise<KeyGrant> {
    const grant = await this.placement.authenticate(head);
    noteModule(head, grant.module);
    return grant;
  }

  modelRoute(name: string): ReturnType<ModelRouteLookup> {
    return this.placement.modelRoute(name);
  }

  /** The models this caller may call, by name, with whether each has a ready replica now. */
  async callableModels(grant: KeyGrant, call: V2Call, endpoint: string): Promise<CallableModel[]> {
    await this.refusalsNoted(grant, call.head, SERVER, async () => {
      const target: Target = { kind: 'models' };
      enforce(this.s.admission.scope(grant, target));
      call.holdSlot(grant);
      await this.s.admission.spend(grant, 1, `${call.head.method ?? 'GET'} ${endpoint}`, SERVER);
    });
    const mine = (await this.models.list())
      .filter((m) => this.s.admission.lists(grant, m))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    return Promise.all(
      mine.map(async (m) => {
        const route = await this.placement.modelRoute(m.name);
        const readyVersions = new Set((route?.versions ?? []).map((v) => v.name));
        return {
          name: m.name,
          workflow: m.workflow,
          ready: route !== null,
          ...(m.versions === undefined
            ? {}
            : { versions: m.versions.map((name) => ({ name, ready: readyVersions.has(name) })) }),
        };
      }),
    );
  }

  /**
   * The runtime of a model the caller's grant may call; 403, 404, 429 or 503 with the reason
   * otherwise. A version scaled to zero is woken and waited for unless `want.wake` is false (then
   * the address comes back `cold`).
   */
  async authorised(grant: KeyGrant, call: V2Call, model: string, want: VersionWanted): Promise<Authorised> {
    if (!isModelName(model)) {
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; model names look like model-<id>`,
      );
    }
    const metered: Metered = { kind: 'model', name: model };
    return this.refusalsNoted(grant, call.head, metered, async () => {
      const target: Target = { kind: 'model', model };
      const found = await this.runtimeFor(target, grant, want);
      // Inference (the calls a traffic split applies to) spends the model's price: now, or per
      // row once its batch is read and checked (gateway/v2/inference.ts).
      const price = this.s.admission.price(target, want.split);
      const endpoint = `${call.head.method ?? 'GET'} /v2/models/${model}`;
      // Its owner's slot is held from here to the answer, the wait for a cold model included.
      call.holdSlot(grant);
      if (price.per === 'call') await this.s.admission.spend(grant, price.credits, endpoint, metered);
      const runtime = await this.warm(model, want, found);
      if (runtime.version !== undefined) noteOnCall({ 'tollgate.model.version': runtime.version });
      return price.per === 'call'
        ? { runtime }
        : { runtime, perRow: { credits: price.credits, endpoint, metered } };
    });
  }

  /** A refusal (403, 429) of a key that exists is a key event: audited and counted. */
  private async refusalsNoted<T>(
    grant: KeyGrant,
    head: CallHead,
    metered: Metered,
    step: () => Promise<T>,
  ): Promise<T> {
    try {
      return await step();
    } catch (err) {
      noteRefusal(this.s.refused, grant, err, head, metered);
      throw err;
    }
  }

  private async runtimeFor(
    target: Extract<Target, { kind: 'model' }>,
    grant: KeyGrant,
    want: VersionWanted,
  ): Promise<{ chosen: Chosen; audience: string | undefined }> {
    const { model } = target;
    // Before the model is looked up: a key learns nothing of the models outside its scope.
    enforce(this.s.admission.scope(grant, target));
    let route = await this.placement.modelRoute(model);
    let info: ModelInfo | undefined;
    if (route === null) {
      info = await this.models.find(model);
      // Remembered as missing, it may have been written since (its change notice still on its
      // way): a model that exists is asked for once more before its call is refused as not ready.
      // Not for a bda key of another workflow: it is refused below, and learns nothing here.
      const mine = this.s.admission.claim(grant, target, { workflow: info?.workflow }) === undefined;
      if (info !== undefined && mine) route = await this.placement.modelRoute(model, true);
    }
    // The route's claim (its workflow, its owner today), or the resource's while it has no route.
    const refusal = this.s.admission.claim(
      grant,
      target,
      route === null ? { workflow: info?.workflow } : route.route,
    );
    if (refusal !== undefined) {
      // A bda key outside the model's workflow: the directory is asked as it is for a model that is
      // not there, so the refusal takes as long, and fails as that one would while it cannot be read.
      if (refusal.code === 'model_access_denied' && route !== null) await this.models.find(model);
      throw refusal;
    }
    if (route === null && info === undefined) {
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; list them with GET /events/platform/api/v1/models`,
      );
    }
    if (route === null) {
      if (want.version !== undefined) checkVersionExists(model, want.version, info);
      throw notReady(`model '${model}'`);
    }
    const chosen = await chooseVersion(model, route, want, callerOf(grant), (m) => this.models.find(m));
    return { chosen, audience: route.route.grantAudience };
  }

  private async warm(
    model: string,
    want: VersionWanted,
    { chosen, audience }: { chosen: Chosen; audience: string | undefined },
  ): Promise<RuntimeAddress> {
    if (chosen.cold === true && want.wake !== false) {
      const { drawn, fallback } = chosen;
      try {
        chosen = {
          ...(await warmed(this.s.activator, (m) => this.placement.modelRoute(m), model, chosen.name)),
          ...(drawn === true ? { drawn } : {}),
          ...(fallback === undefined ? {} : { fallback }),
        };
      } catch (err) {
        // A canary the split drew that did not start in time: the ready default answers instead.
        if (fallback === undefined) throw err;
        chosen = fallback;
      }
    }
    return addressOf(chosen, audience);
  }
}

function addressOf(chosen: Chosen, audience: string | undefined): RuntimeAddress {
  return {
    origin: chosen.origin,
    basePath: chosen.basePath,
    ...(audience === undefined ? {} : { grantAudience: audience }),
    ...(chosen.name === undefined ? {} : { version: chosen.name }),
    ...(chosen.cold === true ? { cold: true } : {}),
    ...(chosen.fallback === undefined ? {} : { fallback: addressOf(chosen.fallback, audience) }),
    ...(chosen.drawn === true ? { drawn: true } : {}),
  };
}
