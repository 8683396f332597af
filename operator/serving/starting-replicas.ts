import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isIP } from 'node:net';
import { MAX_PROBE_URL } from '../../common/resources/grant.js';

/**
 * A replica of a workload at zero that is starting: where it serves (its pod's address and the
 * port its Service targets) and the readiness probe its pod declares, as the kubelet runs it.
 */
export interface StartingReplica {
  url: string;
  probe: string;
  /**
   * Epoch ms after which a gateway no longer follows it: an address outlives its pod, and another
   * pod may get it, while a route the operator can no longer rewrite still names it.
   */
  until: number;
}

/** More would not start a model sooner: a workload woken from zero starts one replica. */
const MOST = 4;
/** How long a listed replica is followed at least, without the operator listing it again. */
export const STARTING_TTL_MS = 120_000;
/**
 * `until` moves in steps of this: a reconcile that finds the same replicas writes the same route,
 * so the route is not rewritten (and every gateway's copy dropped) on each event of a pod.
 */
const TTL_STEP_MS = 30_000;

/**
 * The replicas of `workload` whose pods run but whose readiness has not reached the Deployment yet,
 * for the gateway to ask itself, often, rather than wait for the kubelet's probe period, the pod's
 * status, the Deployment's and the route's (Knative's activator probes a revision's pods the same
 * way). Only the pods the workload's Service selects (its namespace, its labels) are taken, the
 * same trust as the Service's own endpoints; a probe's `host` is never followed: both addresses
 * are the pod's.
 */
export function startingReplicas(
  pods: readonly V1Pod[],
  namespace: string,
  selector: Record<string, string>,
  servingPort: string,
  runtimeContainer: string,
  now = Date.now(),
): StartingReplica[] {
  const found: StartingReplica[] = [];
  const until = Math.ceil((now + STARTING_TTL_MS) / TTL_STEP_MS) * TTL_STEP_MS;
  for (const pod of pods) {
    if (found.length === MOST) break;
    const ip = pod.status?.podIP;
    const labels = pod.metadata?.labels ?? {};
    if (
      pod.metadata?.namespace !== namespace ||
      pod.metadata.deletionTimestamp !== undefined ||
      pod.status?.phase !== 'Running' ||
      // Its address would be the node's.
      pod.spec?.hostNetwork === true ||
      ip === undefined ||
      isIP(ip) === 0 ||
      !Object.entries(selector).every(([k, v]) => labels[k] === v)
    )
      continue;
    // A native sidecar (the webhook's) is among the init containers, with the ports it serves.
    const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
    const port = portOf(containers, servingPort);
    const probe = containers.find((c) => c.name === runtimeContainer)?.readinessProbe?.httpGet;
    const probePort = probe === undefined ? undefined : portOf(containers, probe.port);
    if (port === undefined || probe === undefined || probePort === undefined) continue;
    if (probe.scheme !== undefined && probe.scheme.toUpperCase() !== 'HTTP') continue;
    const host = isIP(ip) === 6 ? `[${ip}]` : ip;
    const path = probe.path?.startsWith('/') === true ? probe.path : `/${probe.path ?? ''}`;
    const url = `http://${host}:${port}`;
    let asked: URL;
    try {
      // Parsed after the address, so no path can name another host ("//elsewhere/").
      asked = new URL(`http://${host}:${probePort}${path}`);
      if (asked.host !== new URL(`http://${host}:${probePort}`).host) continue;
      // Every gateway reads the route on each change of it: a pod may not make it large.
      if (asked.href.length > MAX_PROBE_URL) continue;
    } catch {
      continue;
    }
    found.push({ url, probe: asked.href, until });
  }
  return found;
}

/**
 * A port the pod declares, by name (as a Service's targetPort or a probe names it) or by number:
 * never one it does not say it serves.
 */
function portOf(containers: readonly V1Container[], port: number | string): number | undefined {
  const byNumber = typeof port === 'number' || /^\d+$/.test(port) ? Number(port) : undefined;
  for (const c of containers) {
    const p = c.ports?.find((x) => (byNumber === undefined ? x.name === port : x.containerPort === byNumber));
    if (p !== undefined) return p.containerPort;
  }
  return undefined;
}
