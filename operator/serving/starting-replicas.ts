import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isIP } from 'node:net';

/**
 * A replica of a workload at zero that is starting: where it serves (its pod's address and the
 * port its Service targets) and the readiness probe its pod declares, as the kubelet runs it.
 */
export interface StartingReplica {
  url: string;
  probe: string;
}

/** More would not start a model sooner: a workload woken from zero starts one replica. */
const MOST = 4;

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
): StartingReplica[] {
  const found: StartingReplica[] = [];
  for (const pod of pods) {
    if (found.length === MOST) break;
    const ip = pod.status?.podIP;
    const labels = pod.metadata?.labels ?? {};
    if (
      pod.metadata?.namespace !== namespace ||
      pod.metadata.deletionTimestamp !== undefined ||
      pod.status?.phase !== 'Running' ||
      ip === undefined ||
      isIP(ip) === 0 ||
      !Object.entries(selector).every(([k, v]) => labels[k] === v)
    )
      continue;
    const containers = pod.spec?.containers ?? [];
    const port = portOf(containers, servingPort);
    const probe = containers.find((c) => c.name === runtimeContainer)?.readinessProbe?.httpGet;
    const probePort = probe === undefined ? undefined : portOf(containers, probe.port);
    if (port === undefined || probe === undefined || probePort === undefined) continue;
    if (probe.scheme !== undefined && probe.scheme.toUpperCase() !== 'HTTP') continue;
    const host = isIP(ip) === 6 ? `[${ip}]` : ip;
    const path = probe.path?.startsWith('/') === true ? probe.path : `/${probe.path ?? ''}`;
    const url = `http://${host}:${port}`;
    // Parsed after the address, so no path can name another host ("//elsewhere/").
    const asked = new URL(`http://${host}:${probePort}${path}`);
    if (asked.host !== new URL(`http://${host}:${probePort}`).host) continue;
    found.push({ url, probe: asked.href });
  }
  return found;
}

/** A container port by name (as a Service's targetPort or a probe names it) or by number. */
function portOf(containers: readonly V1Container[], port: number | string): number | undefined {
  if (typeof port === 'number') return port >= 1 && port <= 65535 ? port : undefined;
  if (/^\d+$/.test(port)) return portOf(containers, Number(port));
  for (const c of containers) {
    const p = c.ports?.find((x) => x.name === port);
    if (p !== undefined) return p.containerPort;
  }
  return undefined;
}
