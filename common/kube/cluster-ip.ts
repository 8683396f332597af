import { isIP } from 'node:net';

/**
 * Where a Service is called from inside the cluster: its cluster IP, never its DNS name, and only
 * when it selects pods. A tenant may edit its own Services, and a name is only as good as what DNS
 * answers for it: an ExternalName Service (or one turned into it for a moment) is an alias to any
 * host, which the gateway would call from where it stands. A Service without a selector sends its
 * cluster IP wherever its Endpoints say, which a team may write on clusters whose `edit` role still
 * grants them (those begun before Kubernetes 1.22). With a selector, its cluster IP reaches the
 * pods it selects, in its own namespace. A headless Service, with no cluster IP, has no address.
 */
export function clusterIpOrigin(
  spec: { type?: string; clusterIP?: string; selector?: Record<string, string> } | undefined,
  port: number,
): string | undefined {
  const ip = spec?.clusterIP;
  if (spec?.type === 'ExternalName' || ip === undefined) return undefined;
  if (Object.keys(spec?.selector ?? {}).length === 0) return undefined;
  const family = isIP(ip);
  if (family === 0) return undefined;
  return `http://${family === 6 ? `[${ip}]` : ip}:${port}`;
}
