import { z } from 'zod';
import type { ModelSpec } from './generated/models.js';

/**
 * `spec.scaling` with its defaults: the policy the operator's autoscaler applies to each version of
 * a Model, and the wait the gateway's activator allows a call to a version at zero.
 */
export interface ScalingPolicy {
  minReplicas: number;
  maxReplicas: number;
  targetInFlight: number;
  idleMs: number;
  scaleDownMs: number;
  activationTimeoutMs: number;
}

export const SCALING_DEFAULTS = {
  minReplicas: 1,
  maxReplicas: 5,
  targetInFlight: 4,
  idleSeconds: 300,
  scaleDownSeconds: 60,
  activationTimeoutSeconds: 60,
} as const;

/** The Model's scaling policy, or undefined when it runs spec.replicas. */
export function scalingOf(spec: ModelSpec): ScalingPolicy | undefined {
  const s = spec.scaling;
  if (s === undefined) return undefined;
  return {
    minReplicas: s.minReplicas ?? SCALING_DEFAULTS.minReplicas,
    maxReplicas: s.maxReplicas ?? SCALING_DEFAULTS.maxReplicas,
    targetInFlight: s.targetInFlight ?? SCALING_DEFAULTS.targetInFlight,
    idleMs: (s.idleSeconds ?? SCALING_DEFAULTS.idleSeconds) * 1000,
    scaleDownMs: (s.scaleDownSeconds ?? SCALING_DEFAULTS.scaleDownSeconds) * 1000,
    activationTimeoutMs: (s.activationTimeoutSeconds ?? SCALING_DEFAULTS.activationTimeoutSeconds) * 1000,
  };
}

/**
 * What one gateway measured of one version over its last report interval, as read back from Redis:
 * any team's sidecar may write the hash it is read from, so it is parsed, never cast.
 */
export const loadReportSchema = z.object({
  /** Mean calls in flight over the interval. */
  concurrency: z.number().min(0),
  /** When the report was written (epoch ms). */
  at: z.number(),
  /** Who wrote it and its MAC (common/redis/load-reports.ts): the autoscaler believes no other. */
  scope: z.string(),
  mac: z.string(),
});
export type LoadReport = z.infer<typeof loadReportSchema>;

/** The hash field of one gateway's report on one version ("" for an unversioned Model). */
export const loadField = (gateway: string, version: string): string => `${gateway}|${version}`;

export function parseLoadField(field: string): { gateway: string; version: string } | undefined {
  const bar = field.lastIndexOf('|');
  return bar < 0 ? undefined : { gateway: field.slice(0, bar), version: field.slice(bar + 1) };
}

/** A wake-up call for a Model's version at zero ("" : the versions that take unversioned calls). */
export interface WakeRequest {
  model: string;
  version: string;
}
