import { KubeConfig, Watch, type V1Deployment, type V1Pod } from '@kubernetes/client-node';

/** The moments of one cold start, as this process saw them (ms, this host's clock). */
export interface Timeline {
  /** The Deployment's replicas went from 0 (the operator acted on the wake-up). */
  scaled?: number;
  created?: number;
  scheduled?: number;
  /** The pod has an address: its sandbox and network are up. */
  addressed?: number;
  /** The runtime container is running (it may still be waiting for the folder). */
  started?: number;
  /** The pod's Ready condition, as the API server has it. */
  ready?: number;
}

/**
 * Watches a namespace's Deployments and pods while a cold start runs and stamps each step as it is
 * seen, to the millisecond: the pod's own timestamps are kept to the second, too coarse for steps
 * of a few hundred milliseconds. The watch's delay is the same for every step and small on one
 * host, so differences between steps are what they cost.
 */
export class PodTimeline {
  private current: Timeline = {};
  private readonly aborts: Array<{ abort(): void }> = [];

  private constructor(private readonly deployment: string) {}

  static async watch(
    kubeconfig: string,
    ns: string,
    deployment: string,
    labelSelector: string,
  ): Promise<PodTimeline> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const watch = new Watch(kc);
    const t = new PodTimeline(deployment);
    const ignore = (): void => undefined;
    t.aborts.push(
      await watch.watch(
        `/apis/apps/v1/namespaces/${ns}/deployments`,
        {},
        (_type, d: V1Deployment) => t.onDeployment(d),
        ignore,
      ),
      await watch.watch(
        `/api/v1/namespaces/${ns}/pods`,
        { labelSelector },
        (type, p: V1Pod) => {
          if (type !== 'DELETED') t.onPod(p);
        },
        ignore,
      ),
    );
    return t;
  }

  /** Starts a new start's record (call when the model is at zero, before the call). */
  reset(): void {
    this.current = {};
  }

  get seen(): Timeline {
    return this.current;
  }

  close(): void {
    for (const a of this.aborts) a.abort();
  }

  private stamp(step: keyof Timeline, when: boolean): void {
    if (when && this.current[step] === undefined) this.current[step] = Date.now();
  }

  private onDeployment(d: V1Deployment): void {
    if (d.metadata?.name !== this.deployment) return;
    this.stamp('scaled', (d.spec?.replicas ?? 0) > 0);
  }

  private onPod(p: V1Pod): void {
    // A pod of an earlier start still going away is not this start's.
    if (p.metadata?.deletionTimestamp !== undefined) return;
    this.stamp('created', true);
    this.stamp('scheduled', p.spec?.nodeName !== undefined);
    this.stamp('addressed', p.status?.podIP !== undefined);
    const runtime = p.status?.containerStatuses?.find((c) => c.name === 'mlserver');
    this.stamp('started', runtime?.state?.running !== undefined);
    this.stamp(
      'ready',
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    );
  }
}
