import { decide, initialState, type ScaleState } from '../../../operator/scaling/decide.js';
import type { ScalingPolicy } from '../../../common/resources/model-scaling.js';
import { scalingOf } from '../../../common/resources/model-scaling.js';

const policy: ScalingPolicy = {
  minReplicas: 1,
  maxReplicas: 4,
  targetInFlight: 2,
  idleMs: 30_000,
  scaleDownMs: 10_000,
  activationTimeoutMs: 60_000,
};

/** Feeds one concurrency per second from t=0 and returns the replicas after each. */
function run(p: ScalingPolicy, loads: number[], start?: ScaleState): number[] {
  let state = start ?? initialState(p, 0);
  return loads.map((load, i) => {
    state = decide(p, state, load, i * 1000);
    return state.replicas;
  });
}

describe('the autoscaler’s decision', () => {
  test('defaults fill what spec.scaling leaves out', () => {
    expect(scalingOf({ storageUri: 's3://b/m', scaling: { minReplicas: 0 } })).toEqual({
      minReplicas: 0,
      maxReplicas: 5,
      targetInFlight: 4,
      idleMs: 300_000,
      scaleDownMs: 60_000,
      activationTimeoutMs: 60_000,
    });
    expect(scalingOf({ storageUri: 's3://b/m' })).toBeUndefined();
  });

  test('up at once to what the load needs, never past the maximum', () => {
    expect(run(policy, [0, 3, 4.1, 20])).toEqual([1, 2, 3, 4]);
  });

  test('down only to the most wanted over the window: a dip does not flap', () => {
    const loads = [8, 8, 0.5, 8, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
    const replicas = run(policy, loads);
    // 4 held through the dip at t=2 and for the 10 s window after the last 8 (t=3), then 1.
    expect(replicas.slice(0, 13)).toEqual([4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]);
    expect(replicas[14]).toBe(1);
  });

  test('to zero only with minReplicas 0, after the idle window; a wake-up brings one at once', () => {
    const zero = { ...policy, minReplicas: 0, idleMs: 5_000, scaleDownMs: 0 };
    expect(run(zero, [1, 0, 0, 0, 0, 0, 0, 0])).toEqual([1, 1, 1, 1, 1, 0, 0, 0]);
    expect(
      run(
        policy,
        Array.from({ length: 40 }, () => 0),
      ).every((r) => r === 1),
    ).toBe(true);
    const asleep: ScaleState = { replicas: 0, lastActive: 0, wanted: [] };
    const woken = decide(zero, asleep, 0, 60_000, true);
    expect(woken.replicas).toBe(1);
    // Kept for the idle window after the wake-up, then back to zero.
    expect(decide(zero, woken, 0, 64_000).replicas).toBe(1);
    expect(decide(zero, woken, 0, 65_000).replicas).toBe(0);
  });
});
