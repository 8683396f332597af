import { cohortIsEmpty, type Cohort } from './cohort.js';
import { modelSpecSchema, type ModelSpec } from './generated/models.js';
import { isRuntimeEnvSetByTollgate, RUNTIME_ENV_SET_BY_TOLLGATE } from './model.js';

/**
 * A Model's versions as the operator serves them and the gateway routes them. A Model with
 * `spec.storageUri` has one unnamed version, served under the Model's own name (the shape every
 * Model had before versions); one with `spec.versions` has one workload per version, named
 * `<model>-<version>`, and a traffic split: each canary in `spec.traffic` takes its percentage of
 * unversioned inference calls, or every call of its cohort's callers, and the default version
 * takes the rest.
 */
export interface ServedVersion {
  /** undefined for the unnamed version of a Model with spec.storageUri. */
  name: string | undefined;
  storageUri: string;
  /** The Deployment, Service (or local run) that serves it. */
  workload: string;
  isDefault: boolean;
  /** Percentage of unversioned inference calls it is meant to take (of the callers outside any cohort). */
  percent: number;
  /** The callers whose unversioned inference calls it takes, every one of them. */
  cohort?: Cohort;
}

/** The label a version's workload and pods carry (absent on an unversioned Model's). */
export const VERSION_LABEL = 'tollgate.dev/model-version';

export const versionWorkload = (model: string, version: string | undefined): string =>
  version === undefined ? model : `${model}-${version}`;

/** The version the unversioned metadata and readiness paths serve. */
export function defaultVersionOf(spec: ModelSpec): string | undefined {
  return spec.versions === undefined ? undefined : (spec.defaultVersion ?? spec.versions[0]?.name);
}

export function servedVersions(model: string, spec: ModelSpec): ServedVersion[] {
  if (spec.versions === undefined) {
    return [
      { name: undefined, storageUri: spec.storageUri ?? '', workload: model, isDefault: true, percent: 100 },
    ];
  }
  const fallback = defaultVersionOf(spec);
  const traffic = spec.traffic ?? [];
  const canaryTotal = traffic.reduce((a, t) => a + (t.percent ?? 0), 0);
  return spec.versions.map((v) => {
    const isDefault = v.name === fallback;
    const entry = isDefault ? undefined : traffic.find((t) => t.version === v.name);
    return {
      name: v.name,
      storageUri: v.storageUri,
      workload: versionWorkload(model, v.name),
      isDefault,
      percent: isDefault ? Math.max(0, 100 - canaryTotal) : (entry?.percent ?? 0),
      ...(entry?.cohort === undefined ? {} : { cohort: entry.cohort }),
    };
  });
}

/**
 * The CRD's cross-field rules (x-kubernetes-validations), for the stores the API server does not
 * check (standalone manifests, the platform resource before a write): each problem with its field.
 */
export function versionProblems(model: string, spec: ModelSpec): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  const names = (spec.versions ?? []).map((v) => v.name);
  if ((spec.storageUri === undefined) === (spec.versions === undefined)) {
    problems.push({
      field: 'spec.storageUri',
      message: 'set either spec.storageUri (one unnamed version) or spec.versions, not both',
    });
  }
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name))
      problems.push({ field: 'spec.versions', message: `version "${name}" is listed twice` });
    seen.add(name);
    if (model.length + name.length > 62) {
      problems.push({
        field: 'spec.versions',
        message: `"${model}" and version "${name}" together exceed 62 characters (each version is served as <name>-<version>); shorten one`,
      });
    }
  }
  if (spec.defaultVersion !== undefined && !names.includes(spec.defaultVersion)) {
    problems.push({
      field: 'spec.defaultVersion',
      message: `spec.defaultVersion "${spec.defaultVersion}" must name one of spec.versions (${names.join(', ') || 'none'})`,
    });
  }
  const fallback = defaultVersionOf(spec);
  const traffic = spec.traffic ?? [];
  const canaries = new Set<string>();
  for (const t of traffic) {
    if (!names.includes(t.version)) {
      problems.push({
        field: 'spec.traffic',
        message: `spec.traffic names version "${t.version}", which is not one of spec.versions (${names.join(', ') || 'none'})`,
      });
    } else if (t.version === fallback) {
      problems.push({
        field: 'spec.traffic',
        message: `"${t.version}" is the default version: spec.traffic lists canary versions only, and the default gets what they leave`,
      });
    }
    if (canaries.has(t.version)) {
      problems.push({ field: 'spec.traffic', message: `version "${t.version}" has two traffic entries` });
    }
    canaries.add(t.version);
    if ((t.percent === undefined) === (t.cohort === undefined))
      problems.push({
        field: 'spec.traffic',
        message: `the entry of version "${t.version}" must set either percent (a share of the calls) or cohort (the callers it serves), not ${t.percent === undefined ? 'neither' : 'both'}`,
      });
  }
  const cohorts: Array<[string, Cohort | undefined]> = [
    ...traffic.map((t, i): [string, Cohort | undefined] => [`spec.traffic[${i}].cohort`, t.cohort]),
    ['spec.shadow.cohort', spec.shadow?.cohort],
    ['spec.rollout.cohort', spec.rollout?.cohort],
  ];
  for (const [field, cohort] of cohorts)
    if (cohort !== undefined && cohortIsEmpty(cohort))
      problems.push({
        field,
        message: `${field} names no caller: list identities or keys, or give it a percent above 0`,
      });
  const others = (field: string, version: string, role: string) => {
    if (!names.includes(version)) {
      problems.push({
        field,
        message: `${field} names version "${version}", which is not one of spec.versions (${names.join(', ') || 'none'})`,
      });
    } else if (version === fallback) {
      problems.push({ field, message: `"${version}" is the default version; ${field} names ${role}` });
    }
  };
  if (spec.shadow !== undefined) {
    others('spec.shadow.version', spec.shadow.version, 'a version that only gets copies of its calls');
    if (canaries.has(spec.shadow.version))
      problems.push({
        field: 'spec.shadow.version',
        message: `"${spec.shadow.version}" also takes calls in spec.traffic: a shadow's answers are never returned`,
      });
  }
  if (spec.rollout !== undefined) {
    others('spec.rollout.version', spec.rollout.version, 'the canary it brings in');
    if (traffic.length > 0)
      problems.push({
        field: 'spec.traffic',
        message: "spec.rollout sets the canary's traffic itself: remove spec.traffic",
      });
    if (spec.shadow?.version === spec.rollout.version)
      problems.push({
        field: 'spec.shadow.version',
        message: "the rollout's canary cannot also be the shadow version",
      });
    const steps = spec.rollout.steps ?? [];
    if (steps.some((x, i) => i > 0 && x <= (steps[i - 1] ?? 0)))
      problems.push({
        field: 'spec.rollout.steps',
        message: `spec.rollout.steps must increase (${steps.join(', ')})`,
      });
  }
  const reserved = (spec.env ?? []).filter((e) => isRuntimeEnvSetByTollgate(e.name)).map((e) => e.name);
  if (reserved.length > 0)
    problems.push({
      field: 'spec.env',
      message: `spec.env may not set ${reserved.join(', ')}: Tollgate sets ${RUNTIME_ENV_SET_BY_TOLLGATE.join(', ')} and every TOLLGATE_* variable itself; remove them`,
    });
  const total = traffic.reduce((a, t) => a + (t.percent ?? 0), 0);
  if (total > 100) {
    problems.push({
      field: 'spec.traffic',
      message: `spec.traffic percentages add up to ${total}; they must add up to at most 100`,
    });
  }
  return problems;
}

const versionName = modelSpecSchema.shape.versions.unwrap().element.shape.name;

/** Whether a Model could have a version of this name (the CRD's rule). */
export const isVersionName = (name: string): boolean => versionName.safeParse(name).success;
