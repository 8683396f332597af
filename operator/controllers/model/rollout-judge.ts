import type { VersionFigures } from '../../../common/redis/version-figures.js';
import { modelAccount } from '../../../common/resources/grant.js';
import type { Model } from '../../../common/resources/model.js';
import {
  advanceRollout,
  checkEveryMs,
  rolloutRevision,
  type RolloutStatus,
  type RolloutStep,
} from './rollout.js';

/** A version's figures at the gateways over a span, for spec.rollout's analysis. */
export type FiguresOf = (
  model: string,
  version: string,
  fromMs: number,
  toMs: number,
) => Promise<VersionFigures>;

/**
 * The rollout part of the Model reconciler: where spec.rollout stands, judged from the canary's
 * figures (rollout.ts) at most once per check interval while a step runs.
 *
 * Its status writes wake nothing (the reconciler's event filter drops status-only updates); what
 * still wakes a pass mid-step is the Model's workloads (a canary's Deployment rolling out), and
 * those judge nothing again before the interval is up. Its own last judgement is kept because
 * this operator is the only writer of status.rollout: its last word is newer than a cached status
 * that may not have seen the write yet.
 */
export class RolloutJudge {
  private readonly judged = new Map<string, { at: number; status: RolloutStatus }>();

  constructor(private readonly figures: FiguresOf) {}

  async step(model: Model, key: string): Promise<RolloutStep | undefined> {
    const { spec, status } = model;
    if (spec.rollout === undefined) {
      this.judged.delete(key);
      return undefined;
    }
    const last = this.judged.get(key);
    const previous = last?.status ?? status?.rollout;
    const now = Date.now();
    const every = checkEveryMs(spec);
    if (
      last !== undefined &&
      now < last.at + every &&
      previous?.phase === 'Progressing' &&
      previous.revision === rolloutRevision(spec)
    )
      return { status: previous, recheckMs: last.at + every - now };
    const canary = spec.rollout.version;
    const canaryReady = (status?.versions ?? []).some((v) => v.name === canary && v.phase === 'Ready');
    const account = modelAccount(
      model.metadata.namespace ?? 'default',
      model.metadata.name,
      model.metadata.uid,
    );
    const step = await advanceRollout(
      spec,
      previous,
      canaryReady,
      (version, from, to) => this.figures(account, version, from, to),
      now,
    );
    if (step === undefined) this.judged.delete(key);
    else this.judged.set(key, { at: now, status: step.status });
    return step;
  }

  forget(key: string): void {
    this.judged.delete(key);
  }
}
