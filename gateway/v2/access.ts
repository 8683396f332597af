import type { CreditCosts } from '../auth/credit-costs.js';
import type { IncomingMessage } from 'node:http';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { isModelName } from '../../common/resources/model-name.js';
import { scopeAllows } from '../../common/apikey/model-scope.js';
import type { RoleCatalogue } from '../../common/apikey/roles.js';
import { isLimited, type RateLimiter } from '../auth/rate-limit.js';
import { noteRefusal, type RefusalSink } from '../auth/refusals.js';
import type { UsageRecorder } from '../auth/usage.js';
import type { Activator } from './activator.js';
import { countedUpstream } from '../auth/signed-grant.js';
import { refuseOtherOwner } from '../auth/workflow-owner.js';
import type { Authenticate } from '../auth/authenticate.js';
import { noteModule } from '../http/call-module.js';
import type { RuntimeAddress } from '../routing/route-table.js';
import type { GatewayServices } from '../services.js';
import { warmed, type ModelRouteLookup } from './activation.js';
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

/** What the access checks use of the gateway's services (a unit test passes fakes). */
export interface AccessServices {
  roles: Pick<RoleCatalogue, 'allows'>;
  rateLimiter: Pick<RateLimiter, 'take'>;
  /** What an inference call spends of a key's credits, by model. */
  creditCosts: Pick<CreditCosts, 'of'>;
  usage: Pick<UsageRecorder, 'record'>;
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

const forbidden = (message: string): TollgateError => new TollgateError('model_access_denied', message);

/**
 * Who may call which model, and where the call goes: the key, its role or workflow, its rate
 * limit, the model and version, and (for a model scaled to zero) the wait for a replica. Every
 * check that can refuse a call runs before the wait: a key over its limit must not wake a model.
 */
export class ModelAccess {
  constructor(
    private readonly s: AccessServices,
    private readonly models: ModelDirectory,
    private readonly placement: V2Placement,
  ) {}

  /** The caller's grant, noted on the call for the request metric's module label. */
  async authenticate(req: IncomingMessage): Promise<KeyGrant> {
    const grant = await this.placement.authenticate(req);
    noteModule(req, grant.module);
    return grant;
  }

  modelRoute(name: string): ReturnType<ModelRouteLookup> {
    return this.placement.modelRoute(name);
  }

  /** The models this caller may call, by name, with whether each has a ready replica now. */
  async callableModels(req: IncomingMessage, endpoint: string): Promise<CallableModel[]> {
    const grant = await this.authenticate(req);
    await this.refusalsNoted(grant, req, async () => {
      this.checkInferenceRole(grant);
      await this.admit(grant, req, endpoint);
    });
    const mine = (await this.models.list())
      .filter((m) =>
        grant.module === 'platform'
          ? scopeAllows(grant.models, m.name)
          : m.workflow !== undefined && m.workflow === grant.roles[0],
      )
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
   * The caller's grant and the runtime of a model it may call; 403, 404, 429 or 503 with the
   * reason otherwise. A version scaled to zero is woken and waited for unless `want.wake` is false
   * (then the address comes back `cold`).
   */
  async authorised(
    req: IncomingMessage,
    model: string,
    want: VersionWanted,
  ): Promise<{ grant: KeyGrant; runtime: RuntimeAddress }> {
    const grant = await this.authenticate(req);
    if (!isModelName(model)) {
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; model names look like model-<id>`,
      );
    }
    return this.refusalsNoted(grant, req, async () => {
      const found = await this.runtimeFor(model, grant, want);
      // Inference (the calls a traffic split applies to) spends the model's price.
      await this.admit(grant, req, `/v2/models/${model}`, want.split ? this.s.creditCosts.of(model) : 1);
      return { grant, runtime: await this.warm(model, want, found) };
    });
  }

  /** A grant the central gateway signed was rate-limited and counted there already. */
  private async admit(grant: KeyGrant, req: IncomingMessage, endpoint: string, cost = 1): Promise<void> {
    if (countedUpstream(grant)) return;
    if (isLimited(grant)) await this.s.rateLimiter.take(grant, cost);
    this.s.usage.record(grant.id, `${req.method ?? 'GET'} ${endpoint}`);
  }

  /** A refusal (403, 429) of a key that exists is a key event: audited and counted. */
  private async refusalsNoted<T>(grant: KeyGrant, req: IncomingMessage, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      noteRefusal(this.s.refused, grant, err, req);
      throw err;
    }
  }

  /** A platform key must allow inference; a bda key may call its workflow's models only. */
  private checkInferenceRole(grant: KeyGrant): void {
    if (grant.module === 'platform' && !this.s.roles.allows(grant.roles, 'INFER', 'models')) {
      throw forbidden(
        `this key's roles (${grant.roles.join(', ')}) do not allow model inference; use a platform key with role models:inference or editor`,
      );
    }
  }

  private async runtimeFor(
    model: string,
    grant: KeyGrant,
    want: VersionWanted,
  ): Promise<{ chosen: Chosen; audience: string | undefined }> {
    this.checkInferenceRole(grant);
    // Before the model is looked up: a key learns nothing of the models outside its scope.
    if (!scopeAllows(grant.models, model)) {
      throw new TollgateError(
        'model_not_in_key_scope',
        `this key may call only ${(grant.models ?? []).join(', ')}; model '${model}' is not among them (GET /v2/models lists what it may call)`,
      );
    }
    let route = await this.placement.modelRoute(model);
    let info: ModelInfo | undefined;
    if (route === null) {
      info = await this.models.find(model);
      // Remembered as missing, it may have been written since (its change notice still on its
      // way): a model that exists is asked for once more before its call is refused as not ready.
      // Not for a bda key of another workflow: it is refused below, and learns nothing here.
      const mine =
        grant.module !== 'bda' || (info?.workflow !== undefined && info.workflow === grant.roles[0]);
      if (info !== undefined && mine) route = await this.placement.modelRoute(model, true);
    }
    const workflow = route === null ? info?.workflow : route.route.workflow;
    // One answer to a bda key for any model outside its workflow, there or not: the key learns
    // neither which models exist nor which workflow another one serves.
    if (grant.module === 'bda' && (workflow === undefined || grant.roles[0] !== workflow)) {
      // The directory is asked as it is for a model that is not there: the refusal takes as long,
      // and fails as that one would while the directory cannot be read.
      if (route !== null) await this.models.find(model);
      throw forbidden(
        `this key is for workflow '${grant.roles[0] ?? ''}', and no model '${model}' of that workflow is served: a bda key calls the models whose spec.workflow names its workflow (GET /v2/models lists them); a platform key with role models:inference calls the others`,
      );
    }
    if (route === null && info === undefined) {
      throw new TollgateError(
        'model_not_found',
        `no model named '${model}'; list them with GET /events/platform/api/v1/models`,
      );
    }
    if (grant.module === 'bda' && workflow !== undefined)
      refuseOtherOwner(route?.route.owner, grant, workflow);
    if (route === null) {
      if (want.version !== undefined) checkVersionExists(model, want.version, info);
      throw notReady(`model '${model}'`);
    }
    const chosen = await chooseVersion(model, route, want, (m) => this.models.find(m));
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
