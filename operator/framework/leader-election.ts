import { CoordinationV1Api, type KubeConfig, type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { isApiStatus } from '../../common/kube/custom-objects.js';
import type { Logger } from '../../common/logger.js';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** This replica's identity (pod name + a random suffix). */
  identity: string;
  leaseDurationSeconds?: number;
  /** How often the leader renews and candidates retry. */
  retryPeriodMs?: number;
  /**
   * This replica's wall clock, for the times it writes into the Lease (tests give one skewed).
   * Whether a Lease expired is never read from them: see `observed`.
   */
  wallClock?: () => Date;
}

/**
 * Leader election on a coordination.k8s.io Lease, as client-go does it: the holder renews the
 * Lease every retry period; others take it over only once they have seen it unchanged for a full
 * lease duration, measured on their own monotonic clock from when they saw it change, never by
 * comparing the holder's `renewTime` with their own wall clock (two clocks apart by more than a
 * lease would otherwise both lead). Every write carries the Lease's resourceVersion, so two
 * candidates racing for an expired Lease cannot both win (the second gets a 409). A leader that
 * fails to renew before its lease would expire steps down at once, before anyone else can take over.
 */
export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private readonly duration: number;
  private readonly retryMs: number;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private lastRenew = 0;
  /** The Lease record last read and when (monotonic ms) this replica saw it change. */
  private observed: { record: string; at: number } | undefined;
  private readonly wallClock: () => Date;

  constructor(
    kc: KubeConfig,
    private readonly opts: LeaderElectionOptions,
    private readonly log: Logger,
    private readonly callbacks: { onStartedLeading: () => void; onStoppedLeading: () => void },
  ) {
    this.api = kc.makeApiClient(CoordinationV1Api);
    this.duration = opts.leaseDurationSeconds ?? 15;
    this.retryMs = opts.retryPeriodMs ?? 2000;
    this.wallClock = opts.wallClock ?? (() => new Date());
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    void this.tick();
  }

  /** Stops campaigning; a leader releases the Lease so a successor need not wait for it to expire. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.leading) {
      this.setLeading(false);
      await this.release().catch((err: unknown) =>
        this.log.warn({ err }, 'could not release the leader Lease'),
      );
    }
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const held = await this.tryAcquireOrRenew();
      if (held) this.lastRenew = performance.now();
      this.setLeading(held);
    } catch (err) {
      this.log.warn({ err }, 'leader election: could not reach the Lease');
    }
    // A leader that cannot renew steps down before its lease can expire and be taken.
    if (this.leading && performance.now() - this.lastRenew > (this.duration * 1000 * 2) / 3)
      this.setLeading(false);
    if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.retryMs);
  }

  private setLeading(leading: boolean): void {
    if (leading === this.leading) return;
    this.leading = leading;
    this.log.info(
      { identity: this.opts.identity, lease: this.opts.name },
      leading ? 'became leader' : 'stopped leading',
    );
    if (leading) this.callbacks.onStartedLeading();
    else this.callbacks.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.opts;
    const now = new V1MicroTime(this.wallClock().getTime());
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ namespace, name });
    } catch (e) {
      if (!isApiStatus(e, 404)) throw e;
      return this.write(() =>
        this.api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: this.duration,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
        }),
      );
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity;
    // What the holder wrote, as this replica saw it: a change restarts its own count.
    const record = JSON.stringify([holder, spec.renewTime, spec.acquireTime, spec.leaseDurationSeconds]);
    if (this.observed?.record !== record) this.observed = { record, at: performance.now() };
    const expired =
      !holder || performance.now() > this.observed.at + (spec.leaseDurationSeconds ?? this.duration) * 1000;
    if (holder !== identity && !expired) return false;
    const body: V1Lease = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: this.duration,
        renewTime: now,
        ...(holder !== identity
          ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }
          : {}),
      },
    };
    return this.write(() => this.api.replaceNamespacedLease({ namespace, name, body }));
  }

  private async write(call: () => Promise<V1Lease>): Promise<boolean> {
    try {
      await call();
      return true;
    } catch (e) {
      if (isApiStatus(e, 409)) return false;
      throw e;
    }
  }

  private async release(): Promise<void> {
    const { namespace, name, identity } = this.opts;
    const lease = await this.api.readNamespacedLease({ namespace, name });
    if (lease.spec?.holderIdentity !== identity) return;
    await this.api.replaceNamespacedLease({
      namespace,
      name,
      body: { ...lease, spec: { ...lease.spec, holderIdentity: undefined, renewTime: undefined } },
    });
  }
}
