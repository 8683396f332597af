import { scopeAllows } from '../../common/apikey/model-scope.js';
import type { RoleCatalogue } from '../../common/apikey/roles.js';
import { TollgateError } from '../../common/errors.js';
import type { KeyGrant } from '../../common/resources/grant.js';
import { ONE_CREDIT, type CreditCosts, type Price } from '../auth/credit-costs.js';
import { isLimited, type RateLimiter } from '../auth/rate-limit.js';
import { countedUpstream } from '../auth/signed-grant.js';
import type { UsageRecorder } from '../auth/usage.js';
import type { Metered, UsageMeter } from '../usage-export/meter.js';
import type { CallShares, Release } from './call-shares.js';
import { currentCall, inChildSpan, noteOnCall, SpanKind } from '../../common/tracing/call-trace.js';
import { callAttributes, redisSpan } from '../tracing/call-attributes.js';

/**
 * The admission decision: whether a key may make a call, and what the call spends. Every entry
 * (REST `/events/bda`, `/events/platform`, `/v2`, gRPC, a workflow's sidecar, a model's sidecar)
 * parses its request into a typed target and asks here; none of them compares a key's module,
 * roles or owner itself. A rule added here holds on every entry at once (and is a row in
 * test/unit/admission/parity.test.ts).
 *
 * Three steps, in the order a call meets them, so a key learns nothing of what it may not call:
 *   scope:  the key against the target alone (module, role, method, model scope), before any
 *           lookup;
 *   claim:  the key against what the operator's route says of the target (its workflow, its owner
 *           today), once the route is found;
 *   spend:  the key's limits and credits at the target's price, and its usage, last.
 * The key's own state (expiry, a roll's grace, its networks, a missing identity) is the key
 * check's (auth/key-check.ts), before any of this.
 */
export type Target =
  /** A workflow's service (`/events/bda/<workflow>/<service>/...`, or a workflow's sidecar). */
  | { kind: 'workflow'; workflow: string }
  /**
   * A platform resource (`/events/platform/api/v1/<resource>`); `served`: whether this gateway
   * serves it (asked after the module, so a key of the other module learns nothing of which do).
   */
  | { kind: 'platform'; resource: string; method: string; served: boolean }
  /** A model's V2 endpoints (`/v2/models/<model>`, gRPC, a model's sidecar). */
  | { kind: 'model'; model: string }
  /** The listing of the models a key may call (`GET /v2/models`, the repository index). */
  | { kind: 'models' };

/** What the operator's route for the target says of it: the workflow it serves and its owner today. */
export interface Claim {
  workflow?: string | undefined;
  owner?: string | undefined;
}

/** A refusal, or none: what each entry renders (an HTTP status and body, a gRPC status). */
export type Decision = TollgateError | undefined;

const PLATFORM_METHODS = new Set(['GET', 'PUT', 'POST']);

export interface AdmissionServices {
  roles: Pick<RoleCatalogue, 'allows'>;
  rateLimiter: Pick<RateLimiter, 'take'>;
  /** What a call spends of a key's credits, by platform resource or model. */
  creditCosts: Pick<CreditCosts, 'of'>;
  usage: Pick<UsageRecorder, 'record'>;
  /** Usage for export (a central gateway's, when usageExport is on). */
  meter?: Pick<UsageMeter, 'called'> | undefined;
  /** The calls in flight each owner holds on this replica (call-shares.ts). */
  calls: Pick<CallShares, 'enterOwner'>;
}

const NOTHING_HELD: Release = () => undefined;

export class Admission {
  constructor(private readonly s: AdmissionServices) {}

  /** The key against the target alone; asked before anything about the target is looked up. */
  scope(grant: KeyGrant, target: Target): Decision {
    if (currentCall() !== undefined) noteOnCall(callAttributes(grant, target));
    return this.scoped(grant, target);
  }

  private scoped(grant: KeyGrant, target: Target): Decision {
    switch (target.kind) {
      case 'workflow':
        if (grant.module !== 'bda')
          return new TollgateError(
            'module_mismatch',
            `this key is for module "${grant.module}"; calls to workflow "${target.workflow}" need a bda key of that workflow`,
          );
        return isKeyOf(grant, target.workflow)
          ? undefined
          : new TollgateError(
              'workflow_not_allowed',
              `this key is not for workflow "${target.workflow}"; use a key created for it`,
            );
      case 'platform':
        if (grant.module !== 'platform')
          return new TollgateError(
            'module_mismatch',
            `this key is for module "${grant.module}"; platform calls need a platform key`,
          );
        if (!target.served)
          return new TollgateError('unknown_resource', `the platform has no resource "${target.resource}"`);
        if (!PLATFORM_METHODS.has(target.method))
          return new TollgateError(
            'method_not_allowed',
            `platform resources accept GET, PUT and POST, not ${target.method}`,
            { headers: { allow: 'GET, PUT, POST' } },
          );
        return this.s.roles.allows(grant.roles, target.method as 'GET' | 'PUT' | 'POST', target.resource)
          ? undefined
          : new TollgateError(
              'role_not_allowed',
              `this key's roles (${grant.roles.join(', ')}) do not allow ${target.method} on ${target.resource}`,
            );
      case 'model':
      case 'models':
        // A bda key's models are those of its workflow: known only from the model's route (claim).
        if (grant.module !== 'platform') return undefined;
        if (!this.s.roles.allows(grant.roles, 'INFER', 'models'))
          return new TollgateError(
            'model_access_denied',
            `this key's roles (${grant.roles.join(', ')}) do not allow model inference; use a platform key with role models:inference or editor`,
          );
        // The listing shows the models of the key's scope (lists() below).
        if (target.kind === 'models') return undefined;
        return scopeAllows(grant.models, target.model)
          ? undefined
          : new TollgateError(
              'model_not_in_key_scope',
              `this key may call only ${(grant.models ?? []).join(', ')}; model '${target.model}' is not among them (GET /v2/models lists what it may call)`,
            );
    }
  }

  /**
   * The key against the route the operator wrote for the target (or, for a model without one yet,
   * what its resource says: the workflow, no owner). A workflow's route names its owner today: a
   * key its former owner made is refused, on every path.
   */
  claim(grant: KeyGrant, target: Target, claim: Claim): Decision {
    if (grant.module !== 'bda' || target.kind === 'platform' || target.kind === 'models') return undefined;
    const workflow = target.kind === 'workflow' ? target.workflow : claim.workflow;
    if (target.kind === 'model' && (workflow === undefined || !isKeyOf(grant, workflow))) {
      // One answer for any model outside the key's workflow, there or not: the key learns neither
      // which models exist nor which workflow another one serves.
      return new TollgateError(
        'model_access_denied',
        `this key is for workflow '${grant.roles[0] ?? ''}', and no model '${target.model}' of that workflow is served: a bda key calls the models whose spec.workflow names its workflow (GET /v2/models lists them); a platform key with role models:inference calls the others`,
      );
    }
    if (claim.owner !== undefined && claim.owner !== grant.owner)
      return new TollgateError(
        'workflow_not_owned',
        `workflow "${workflow ?? ''}" now belongs to another owner, and this key was made by its former one; its owner makes a new key`,
      );
    return undefined;
  }

  /** Whether a model is the key's to call, for listings (the claim as the model's resource makes it). */
  lists(grant: KeyGrant, model: { name: string; workflow: string | undefined }): boolean {
    const target: Target = { kind: 'model', model: model.name };
    // Asked once per model of a listing: the call's target stays the listing.
    if (grant.module === 'platform') return this.scoped(grant, target) === undefined;
    return this.claim(grant, target, { workflow: model.workflow }) === undefined;
  }

  /**
   * What a call to the target costs in credits: 1, or the administrator's price for it, per call
   * or (a model's inference) per row of its batch, spent once the batch is checked (spendRows).
   */
  price(target: Target, priced: boolean): Price {
    if (!priced || target.kind === 'workflow' || target.kind === 'models') return ONE_CREDIT;
    return this.s.creditCosts.of(target.kind === 'platform' ? target.resource : target.model);
  }

  /**
   * One of the owner's calls in flight on this replica, held until the call ends (`release`), REST
   * and gRPC alike; throws 429 too_many_calls past the owner's share, before anything is spent. A
   * grant the central gateway signed holds its slot there.
   */
  enter(grant: KeyGrant): Release {
    if (countedUpstream(grant)) return NOTHING_HELD;
    return this.s.calls.enterOwner(grant.owner);
  }

  /**
   * A call priced per row, once its batch is checked against the model's metadata: its limits,
   * and `rows` (a call of none costs one row) at the row's price, then its usage; refused with
   * what the batch cost and what is left before the runtime sees the call.
   */
  spendRows(grant: KeyGrant, charge: RowCharge, rows: number): Promise<void> | undefined {
    const billed = Math.max(1, rows);
    const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
    return this.spend(
      grant,
      charge.credits * billed,
      charge.endpoint,
      charge.metered,
      `this batch of ${plural(billed, 'row')} at ${plural(charge.credits, 'credit')} a row`,
    );
  }

  /**
   * Limits and credits at `cost`, then usage under `endpoint` (and for export, of `metered`):
   * synchronous (nothing to wait for) unless the key has limits. A grant the central gateway
   * signed was counted there already.
   */
  spend(
    grant: KeyGrant,
    cost: number,
    endpoint: string,
    metered: Metered,
    what?: string,
  ): Promise<void> | undefined {
    if (countedUpstream(grant)) return undefined;
    const used = (): void => {
      this.s.usage.record(grant.id, endpoint);
      this.s.meter?.called(grant, metered, cost);
    };
    if (!isLimited(grant)) {
      used();
      return undefined;
    }
    const counted = this.s.rateLimiter.take(grant, cost, undefined, what);
    if (counted === undefined) {
      used();
      return undefined;
    }
    // Counted in Redis this time (a lease ran out, or credits): the round trip is the call's child span.
    return inChildSpan('redis limits and credits', SpanKind.CLIENT, redisSpan('MULTI'), () => counted).then(
      used,
    );
  }
}

/**
 * A model's inference priced per row: what is spent once its batch is known (Admission.spendRows),
 * and the endpoint its usage is recorded under.
 */
export interface RowCharge {
  credits: number;
  endpoint: string;
  metered: Metered;
}

/** A bda key is for one workflow: its one role. */
const isKeyOf = (grant: KeyGrant, workflow: string): boolean =>
  grant.roles.length === 1 && grant.roles[0] === workflow;

/** Throws the refusal, if there is one (for entries that answer by throwing). */
export function enforce(decision: Decision): void {
  if (decision !== undefined) throw decision;
}
