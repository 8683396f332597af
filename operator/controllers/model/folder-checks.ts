import { isTollgateError } from '../../../common/errors.js';
import { checkModelFolder } from '../../../common/model-settings/check-folder.js';
import { OWNER_KEY } from '../../../common/resources/labels.js';
import type { Model } from '../../../common/resources/model.js';
import type { ServedVersion } from '../../../common/resources/model-versions.js';
import { parseRefKey, refKey } from '../../framework/resource-source.js';
import { CheckTurns } from '../../storage/check-turns.js';
import type { CredentialsResolver } from '../../storage/credentials.js';
import { openStore } from '../../storage/open-store.js';
import type { Observation } from './status.js';

/** How often a Model whose folder is wrong looks again (the fix may be an upload, not an edit). */
export const RECHECK_MS = 30_000;
/** How long one check of a Model's folder (its listing and settings) may take, all told. */
const STORAGE_CHECK_MS = 20_000;
/**
 * A folder whose check failed is checked again after RECHECK_MS, then twice as long each time, up
 * to this: the store is the Model's author's choice, and one that answers slowly and wrongly must
 * not hold the workers every team's Models share, on every pass.
 */
const MAX_RECHECK_MS = 240_000;
/** The first wait after a check that could not be made (the store down or past its deadline). */
const ERROR_RECHECK_MS = 5_000;
/** Reconciles of one namespace's Models that may be checking stores at once (storage/check-turns.ts). */
const CHECKS_PER_NAMESPACE = 2;

/** Storage errors a user fixes (wrong bucket, missing secret): a condition, not a retry storm. */
const USER_STORAGE_ERRORS: Record<string, string> = {
  no_such_bucket: 'NoSuchBucket',
  no_such_folder: 'NoSuchFolder',
  access_denied: 'AccessDenied',
  credentials_not_found: 'CredentialsNotFound',
  credentials_not_readable: 'CredentialsNotReadable',
  credentials_required: 'CredentialsRequired',
  credentials_not_allowed: 'CredentialsNotAllowed',
  storage_not_allowed: 'StorageNotAllowed',
  invalid_storage_uri: 'InvalidStorageUri',
  object_vanished: 'ObjectVanished',
  folder_too_large: 'FolderTooLarge',
  file_too_large: 'FileTooLarge',
};

/** One workload's last folder check, for a generation of its Model's spec. */
type FolderChecked = { stamp: string; retryAt?: number; failures?: number } & (
  { obs: Observation } | { error: unknown }
);

/**
 * The settings part of the Model reconciler: each version's storage folder, checked once per spec
 * (not per pod change), a failed check again with backoff, and at most a few of one namespace's
 * checks at once.
 */
export class FolderChecks {
  /**
   * Each Model's workloads' last folder checks, for its generation: a good one until the spec
   * changes, a failed one (or one that could not be made) until `retryAt`, backing off with
   * `failures`.
   */
  private readonly checked = new Map<string, Map<string, FolderChecked>>();
  /** Turns at checking stores, by namespace: the workers are every team's. An owned source: it wakes Models. */
  readonly turns = new CheckTurns(CHECKS_PER_NAMESPACE);

  constructor(private readonly credentials: CredentialsResolver) {}

  /**
   * What each version's folder holds, in order; undefined when the store must be asked and no turn
   * is free (the Model is woken when one is). Each folder is checked at once: a reconcile waits for
   * the slowest store, not for the sum of them, and every check settles before this returns or
   * fails, so none is still running when the next pass would start it again.
   */
  async observeAll(model: Model, versions: ServedVersion[], key: string): Promise<Observation[] | undefined> {
    const { namespace } = parseRefKey(key);
    const asks = versions.some((version) => this.lastCheck(model, version, Date.now()) === undefined);
    if (asks && !this.turns.take(namespace, key)) return undefined;
    let settled: Array<PromiseSettledResult<Observation>>;
    try {
      settled = await Promise.allSettled(versions.map((version) => this.observe(model, version)));
    } finally {
      if (asks) this.turns.give(namespace);
    }
    return settled.map((result) => {
      if (result.status === 'rejected') throw result.reason;
      return result.value;
    });
  }

  /** Drops the checks of the Model's workloads that serve no version of its spec any more. */
  keepOnly(key: string, workloads: ReadonlySet<string>): void {
    const checks = this.checked.get(key);
    for (const workload of checks?.keys() ?? []) if (!workloads.has(workload)) checks?.delete(workload);
  }

  /** After every reconcile of a Model, whatever its path (see CheckTurns.done). */
  done(key: string): void {
    this.turns.done(parseRefKey(key).namespace, key);
  }

  forget(key: string): void {
    this.turns.forget(parseRefKey(key).namespace, key);
    // Checks are kept per workload: the Model's own name, or <name>-<version>.
    this.checked.delete(key);
  }

  /** The version's last folder check while it still stands (undefined: the store is asked again). */
  private lastCheck(model: Model, version: ServedVersion, now: number): FolderChecked | undefined {
    const { namespace = 'default', name } = model.metadata;
    const cached = this.checked.get(refKey({ namespace, name }))?.get(version.workload);
    return cached?.stamp === stampOf(model) && (cached.retryAt === undefined || now < cached.retryAt)
      ? cached
      : undefined;
  }

  private async observe(model: Model, version: ServedVersion): Promise<Observation> {
    const { namespace = 'default', name } = model.metadata;
    const modelKey = refKey({ namespace, name });
    const checks = this.checked.get(modelKey) ?? new Map<string, FolderChecked>();
    this.checked.set(modelKey, checks);
    const stamp = stampOf(model);
    const started = Date.now();
    const standing = this.lastCheck(model, version, started);
    if (standing !== undefined) {
      // A store that could not be asked (it hung, it failed) is not asked again before its time:
      // the reconcile fails as it did, without holding a worker for the store's deadline.
      if ('error' in standing) throw standing.error;
      return { ...standing.obs };
    }
    const cached = checks.get(version.workload);
    // Counted from when this check starts, so the pass RECHECK_MS after a failure checks again.
    const backOff = (firstMs: number) => {
      const failures = cached?.stamp === stamp ? (cached.failures ?? 0) + 1 : 1;
      return { stamp, failures, retryAt: started + Math.min(firstMs * 2 ** (failures - 1), MAX_RECHECK_MS) };
    };
    const failed = (obs: Observation): Observation => {
      checks.set(version.workload, { ...backOff(RECHECK_MS), obs });
      return { ...obs };
    };
    try {
      const env = await this.credentials.envFor(
        namespace,
        model.spec.credentials?.secretName,
        version.storageUri,
        model.metadata.annotations?.[OWNER_KEY],
      );
      const refusedAddress = this.credentials.refusedAddress;
      const store = openStore(
        version.storageUri,
        env,
        refusedAddress === undefined ? {} : { refusedAddress },
      );
      // The author chose the store: its answers are bounded in size and time (storage/limits.ts).
      const deadline = AbortSignal.timeout(STORAGE_CHECK_MS);
      const files = (await store.list(deadline)).map((o) => o.path);
      const check = await checkModelFolder({ files, read: (p) => store.readText(p, deadline) }, name);
      if (!check.ok) return failed({ kind: 'settings', check });
      checks.set(version.workload, { stamp, obs: { kind: 'settings', check } });
      return { kind: 'settings', check };
    } catch (e) {
      const reason = isTollgateError(e) ? USER_STORAGE_ERRORS[e.code] : undefined;
      if (reason !== undefined && isTollgateError(e))
        return failed({ kind: 'storage-error', reason, message: e.message });
      // Not the author's to fix (a store down, a deadline passed): what runs keeps running, and the
      // check is made again after the same backoff.
      checks.set(version.workload, { ...backOff(ERROR_RECHECK_MS), error: e });
      throw e;
    }
  }
}

/** A check stands for one generation of one Model (a Model made again under its name is another). */
const stampOf = (model: Model): string => `${model.metadata.uid}:${model.metadata.generation}`;
