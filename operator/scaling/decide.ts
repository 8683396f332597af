import type { ScalingPolicy } from '../../common/resources/model-scaling.js';

/** What the autoscaler remembers of one version's workload between ticks. */
export interface ScaleState {
  replicas: number;
  /** The last time a call was seen (or a gateway asked to wake it), epoch ms. */
  lastActive: number;
  /** The counts wanted over the scale-down window, oldest first. */
  wanted: Array<{ at: number; replicas: number }>;
}

export const initialState = (policy: ScalingPolicy, now: number): ScaleState => ({
  // A new workload (or one the operator has not seen since it started) gets at least one replica:
  // it proves the model loads, and an idle one goes to zero after the idle window anyway.
  replicas: Math.max(policy.minReplicas, 1),
  lastActive: now,
  wanted: [],
});

/**
 * The replicas for a version given the calls in flight the gateways measured (the sum of their
 * means over the last interval). Up at once, to what the load needs; down only to the most wanted
 * over the scale-down window (HPA's stabilisation), so a dip does not flap; to zero only with
 * minReplicas 0, after idleMs without a call. Returns the new state.
 */
export function decide(
  policy: ScalingPolicy,
  state: ScaleState,
  concurrency: number,
  now: number,
  woken = false,
): ScaleState {
  const lastActive = concurrency > 0 || woken ? now : state.lastActive;
  const idle = policy.minReplicas === 0 && !woken && now - lastActive >= policy.idleMs;
  const forLoad = Math.ceil(concurrency / policy.targetInFlight - 1e-9);
  const floor = idle ? 0 : Math.max(policy.minReplicas, 1);
  const want = Math.min(policy.maxReplicas, Math.max(forLoad, floor));
  const wanted = [
    ...state.wanted.filter((w) => now - w.at < policy.scaleDownMs),
    { at: now, replicas: want },
  ];
  let replicas: number;
  if (want >= state.replicas) replicas = want;
  // Idle for the whole idle window already: no further wait before zero.
  else if (want === 0) replicas = 0;
  else replicas = Math.min(state.replicas, Math.max(want, ...wanted.map((w) => w.replicas)));
  return { replicas, lastActive, wanted };
}
