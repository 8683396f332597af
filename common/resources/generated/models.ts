// Generated from crds/models.yaml by tools/codegen/generate-types.ts. Do not edit: change the CRD
// and run `npm run codegen`.
/* eslint-disable no-control-regex */
import { z } from 'zod';
import { objectMetaSchema } from '../object-meta.js';

export const MODEL_API_VERSION = 'tollgate.dev/v1alpha1';
export const MODEL_PLURAL = 'models';

export const modelSpecSchema = z.object({
  /** The model folder: s3://<bucket>/<folder> (every object under exactly that folder) or file:///<path>. It holds the model file and model-settings.json, or an MLflow model (MLmodel). For a model with several versions, use versions instead. */
  storageUri: z.string().max(1024).regex(new RegExp('^(s3|file)://[^\\x00-\\x1f\\x7f]+$')).optional(),
  /** Versions of the model, each served by its own replicas and callable at /v2/models/<name>/versions/<version>/... A version removed from this list stops taking calls, drains, then goes. */
  versions: z
    .array(
      z.object({
        /** The version, e.g. "1" or "v2-retrained". */
        name: z.string().max(20).regex(new RegExp('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')),
        /** This version's model folder (as spec.storageUri). */
        storageUri: z.string().max(1024).regex(new RegExp('^(s3|file)://[^\\x00-\\x1f\\x7f]+$')),
      }),
    )
    .min(1)
    .max(10)
    .optional(),
  /** The version the unversioned paths serve (/v2/models/<name>, .../ready, and the share of .../infer that spec.traffic leaves). Default: the first of versions. */
  defaultVersion: z.string().max(20).optional(),
  /** Canaries: the percentage of unversioned inference calls each other version takes, or the callers (a cohort) whose calls it takes; the default version takes the rest. Shift by editing the percentages, promote by changing defaultVersion, roll back by removing the canary's entry. */
  traffic: z
    .array(
      z.object({
        version: z.string().max(20),
        /** The percentage of unversioned inference calls it takes, whoever makes them. */
        percent: z.int().min(0).max(100).optional(),
        /** The callers whose unversioned inference calls it takes, all of them, so a customer sees one version consistently (instead of percent). A caller in several entries' cohorts goes to the first. */
        cohort: z
          .object({
            /** Identities (by name) whose keys' calls it takes, every one of them. */
            identities: z
              .array(z.string().max(63).regex(new RegExp('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')))
              .max(50)
              .optional(),
            /** Keys (by id) whose calls it takes, a key made by rolling one of them included. */
            keys: z
              .array(z.string().max(64).regex(new RegExp('^[A-Za-z0-9][A-Za-z0-9_-]*$')))
              .max(50)
              .optional(),
            /** A share of the other callers, each chosen by a stable hash of its identity (of the key, for a key without one) and this version: a caller in it stays in it, call after call. */
            percent: z.int().min(0).max(100).optional(),
          })
          .optional(),
      }),
    )
    .max(9)
    .optional(),
  /** Shadow traffic: a version that gets a copy of a share of the calls the serving version answers. Its answers are compared with the serving version's (agreement, latency) and logged with the payload log, never returned to the caller. */
  shadow: z
    .object({
      /** The version that receives the copies (one of spec.versions, not the default). */
      version: z.string().max(20),
      /** The percentage of answered inference calls copied to it. Default 100. */
      percent: z.int().min(1).max(100).optional(),
      /** Copy only the calls of these callers (percent then applies to theirs). */
      cohort: z
        .object({
          /** Identities (by name) whose keys' calls it takes, every one of them. */
          identities: z
            .array(z.string().max(63).regex(new RegExp('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')))
            .max(50)
            .optional(),
          /** Keys (by id) whose calls it takes, a key made by rolling one of them included. */
          keys: z
            .array(z.string().max(64).regex(new RegExp('^[A-Za-z0-9][A-Za-z0-9_-]*$')))
            .max(50)
            .optional(),
          /** A share of the other callers, each chosen by a stable hash of its identity (of the key, for a key without one) and this version: a caller in it stays in it, call after call. */
          percent: z.int().min(0).max(100).optional(),
        })
        .optional(),
    })
    .optional(),
  /** Automatic canary analysis: the operator gives the version its traffic in steps, judges each step on the gateways' figures for it (error rate, p95 latency), and promotes it (it becomes the default, status.defaultVersion) or rolls it back (it takes no calls) on its own. A call the canary fails is answered by the default version instead. A change to either version starts it again; a changed policy applies from the next judgement, and tries a rolled-back canary again. */
  rollout: z
    .object({
      /** The canary (one of spec.versions, not the default). */
      version: z.string().max(20),
      /** The canary's percentage of calls at each step, increasing. Default [10, 50]; promotion follows the last. */
      steps: z.array(z.int().min(1).max(100)).min(1).max(10).optional(),
      /** How long each step runs before it is judged. Default 60. */
      stepSeconds: z.int().min(5).max(86400).optional(),
      /** Calls the canary must answer in a step before it is judged (a quiet step runs longer). Default 20. */
      minCalls: z.int().min(1).max(1000000).optional(),
      /** The largest share of the canary's calls that may fail (the runtime did not answer 200 a request the gateway's checks passed, and the default version did). Default 0.01. */
      maxErrorRate: z.number().min(0).max(1).optional(),
      /** The largest p95 latency (ms, at the gateway) the canary may have over a step. Default none. */
      maxLatencyMs: z.int().min(1).max(600000).optional(),
      /** The most the canary's p95 latency may exceed the default version's over the same step (the rest of the callers: its cohort's against the others', with a cohort). Default none. */
      maxLatencyOverDefaultMs: z.int().min(0).max(600000).optional(),
      /** The callers the canary serves: every step gives it all of their calls and none of the others' (the steps' percentages then do not apply; each step is one more judgement), and it is judged against the default version's calls of the rest. Promotion makes it everyone's default. */
      cohort: z
        .object({
          /** Identities (by name) whose keys' calls it takes, every one of them. */
          identities: z
            .array(z.string().max(63).regex(new RegExp('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')))
            .max(50)
            .optional(),
          /** Keys (by id) whose calls it takes, a key made by rolling one of them included. */
          keys: z
            .array(z.string().max(64).regex(new RegExp('^[A-Za-z0-9][A-Za-z0-9_-]*$')))
            .max(50)
            .optional(),
          /** A share of the other callers, each chosen by a stable hash of its identity (of the key, for a key without one) and this version: a caller in it stays in it, call after call. */
          percent: z.int().min(0).max(100).optional(),
        })
        .optional(),
    })
    .optional(),
  /** A workflow (bda) id. The model is then also reachable as that workflow's service and callable with the workflow's bda keys. */
  workflow: z.string().max(128).regex(new RegExp('^[A-Za-z0-9][A-Za-z0-9_.-]*$')).optional(),
  /** Payload logging: a share of this model's inference calls (request and answer, refusals and runtime errors included) written by the gateway as time-partitioned JSON Lines where the administrator keeps payload logs (model=<name>/date=<d>/hour=<h>/). Logging never slows or fails a call. */
  logging: z
    .object({
      /** The share of calls logged, from 0 (none) to 1 (every call). Default 1. */
      sampleRate: z.number().min(0).max(1).optional(),
      /** Field names logged as "[redacted]": any JSON property of that name, and the data of any input or output tensor of that name. */
      redact: z.array(z.string().min(1).max(128)).max(32).optional(),
    })
    .optional(),
  /** Where the model's calls are checked. central: by the central gateway only (the model's pods answer anyone who reaches them inside the cluster). sidecar: a Tollgate container in each model pod checks every call, from outside or inside the cluster; MLServer listens on the pod's loopback only. Default: the chart's models.gateway. */
  gateway: z.enum(['central', 'sidecar']).optional(),
  /** MLServer replicas of each version (without spec.scaling). 0 keeps the resource but serves nothing. */
  replicas: z.int().min(0).max(50).optional(),
  /** Replicas from the load the gateways measure, instead of spec.replicas: each version gets enough replicas for targetInFlight calls at a time per replica, between minReplicas and maxReplicas. With minReplicas 0 a version with no call for idleSeconds scales to zero, and the next call waits at the gateway while a replica starts. */
  scaling: z
    .object({
      /** Fewest replicas; 0 lets an idle version scale to zero. Default 1. */
      minReplicas: z.int().min(0).max(50).optional(),
      /** Most replicas. Default 5. */
      maxReplicas: z.int().min(1).max(50).optional(),
      /** Calls in flight per replica the scaler aims at. Default 4. */
      targetInFlight: z.int().min(1).max(1000).optional(),
      /** With minReplicas 0, how long without a call before scaling to zero. Default 300. */
      idleSeconds: z.int().min(5).max(86400).optional(),
      /** Stabilisation window: replicas go down only to the most wanted over this many seconds, so a dip in load does not flap them. Default 60. */
      scaleDownSeconds: z.int().min(0).max(3600).optional(),
      /** How long a call to a version at zero waits for a replica before the gateway answers 503 model_scaling_up with Retry-After. Default 60. */
      activationTimeoutSeconds: z.int().min(1).max(600).optional(),
    })
    .optional(),
  /** Compute resources of the MLServer container (as a container's resources). */
  resources: z
    .object({
      requests: z.record(z.string(), z.union([z.number(), z.string()])).optional(),
      limits: z.record(z.string(), z.union([z.number(), z.string()])).optional(),
    })
    .optional(),
  /** The serving runtime. Defaults to MLServer with the scikit-learn runtime. */
  runtime: z
    .object({
      /** Container image; default seldonio/mlserver:1.7.1-sklearn (1.7.1-mlflow for MLflow folders). It is started with sh -c beside the puller, waits for the folder, then runs tollgate-mlserver if it has one, else mlserver start; it needs sh and mlserver on its PATH. */
      image: z.string().min(1).max(512).optional(),
      /** Overrides the implementation of model-settings.json, e.g. mlserver_sklearn.SKLearnModel. */
      implementation: z
        .string()
        .max(256)
        .regex(new RegExp('^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$'))
        .optional(),
    })
    .optional(),
  /** A Secret in the Model's namespace with the storage credentials as AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_ENDPOINT_URL, AWS_REGION). */
  credentials: z
    .object({
      secretName: z.string().max(253).regex(new RegExp('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')),
    })
    .optional(),
  /** Extra environment variables for the MLServer container (not TOLLGATE_* nor the MLServer settings Tollgate sets). */
  env: z
    .array(
      z.object({
        name: z.string().max(128).regex(new RegExp('^[A-Za-z_][A-Za-z0-9_]*$')),
        value: z.string().max(4096),
      }),
    )
    .max(64)
    .optional(),
});
export type ModelSpec = z.infer<typeof modelSpecSchema>;

export const modelStatusSchema = z.object({
  /** Pending (accepted), Loading (deployed, not ready), Ready (serving), Failed (see conditions). */
  phase: z.enum(['Pending', 'Loading', 'Ready', 'Failed']).optional(),
  /** The metadata.generation this status describes. */
  observedGeneration: z.int().optional(),
  /** In-cluster base URL of the model's V2 service. */
  url: z.string().optional(),
  /** When this Model's namespace began to hold its name (a name is a V2 address across the cluster, held by the namespace that has held it longest). Its creation, or, for a Model deleted and made again within 5 minutes, the time its namespace first held the name. Written by the operator only. */
  nameHeldSince: z.iso.datetime({ offset: true }).optional(),
  replicas: z.int().optional(),
  readyReplicas: z.int().optional(),
  /** parameters.content_type of the model settings (np, pd, str). */
  contentType: z.enum(['np', 'pd', 'str']).optional(),
  /** The inputs declared by the model settings (or the MLflow signature). */
  inputs: z
    .array(
      z.object({
        name: z.string(),
        datatype: z.enum(['FP32', 'FP64', 'INT32', 'INT64', 'BOOL', 'BYTES']),
        shape: z.array(z.int()),
      }),
    )
    .optional(),
  /** The outputs declared by the model settings (or the MLflow signature). */
  outputs: z
    .array(
      z.object({
        name: z.string(),
        datatype: z.enum(['FP32', 'FP64', 'INT32', 'INT64', 'BOOL', 'BYTES']),
        shape: z.array(z.int()),
      }),
    )
    .optional(),
  /** The version the unversioned paths serve. */
  defaultVersion: z.string().optional(),
  /** Each version's phase and readiness (a model with spec.versions), including versions removed from the spec that are still draining. */
  versions: z
    .array(
      z.object({
        name: z.string(),
        phase: z.enum(['Pending', 'Loading', 'Ready', 'Failed', 'Draining']),
        /** Percentage of unversioned inference calls it takes now. */
        traffic: z.int().optional(),
        /** The callers whose unversioned inference calls it takes, all of them (spec.traffic's or the rollout's cohort). */
        cohort: z.string().optional(),
        replicas: z.int().optional(),
        readyReplicas: z.int().optional(),
        url: z.string().optional(),
        /** What the version is doing, or what to fix. */
        message: z.string().optional(),
      }),
    )
    .optional(),
  /** Where the automatic canary analysis of spec.rollout stands. */
  rollout: z
    .object({
      version: z.string(),
      /** A digest of the canary and the default version (names, folders); a new one starts the rollout again. */
      revision: z.string().optional(),
      /** A digest of spec.rollout's steps and bounds; a new one tries a rolled-back canary again. */
      policy: z.string().optional(),
      /** Waiting (the canary is not ready yet), Progressing (a step is running), Promoted (the canary is the default now), RolledBack (it takes no calls). */
      phase: z.enum(['Waiting', 'Progressing', 'Promoted', 'RolledBack']),
      /** The step running now (0 is the first). */
      step: z.int().optional(),
      /** The canary's percentage of unversioned inference calls now. */
      weight: z.int().optional(),
      stepStartedAt: z.iso.datetime({ offset: true }).optional(),
      /** Calls the canary answered in this step so far. */
      calls: z.int().optional(),
      errorRate: z.number().optional(),
      p95LatencyMs: z.number().optional(),
      /** The callers the canary serves, with spec.rollout.cohort. */
      cohort: z.string().optional(),
      /** The default version's figures over the same step, which the canary is judged against. */
      baseline: z
        .object({
          calls: z.int().optional(),
          errorRate: z.number().optional(),
          p95LatencyMs: z.number().optional(),
        })
        .optional(),
      /** What the rollout is doing, or why it stopped. */
      message: z.string().optional(),
    })
    .optional(),
  /** SettingsValid, Ready and (with spec.rollout) Rollout, with a reason and a message saying what to change. */
  conditions: z
    .array(
      z.object({
        type: z.string().max(316),
        status: z.enum(['True', 'False', 'Unknown']),
        observedGeneration: z.int().min(0).optional(),
        lastTransitionTime: z.iso.datetime({ offset: true }),
        reason: z.string().max(1024).regex(new RegExp('^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$')),
        message: z.string().max(32768),
      }),
    )
    .optional(),
});
export type ModelStatus = z.infer<typeof modelStatusSchema>;

/** A model published as a V2 inference service. */
export const modelSchema = z.object({
  apiVersion: z.literal('tollgate.dev/v1alpha1'),
  kind: z.literal('Model'),
  metadata: objectMetaSchema,
  spec: modelSpecSchema,
  status: modelStatusSchema.optional(),
});
export type Model = z.infer<typeof modelSchema>;
