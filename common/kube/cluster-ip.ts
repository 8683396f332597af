import { isIP } from 'node:net';

/**
 * Where a Service is called from inside the cluster: its cluster IP, never its DNS name. A tenant
 * may edit its own Services, and a name is only as good as what DNS answers for it: an ExternalName
 * Service (or one turned into it for a moment) is an alias to any host, which the gateway would
 * call from where it stands. A cluster IP reaches nothing but the pods the Service selects, in its
 * own namespace. A headless Service, with no cluster IP, has no such address.
 */
export function clusterIpOrigin(
  spec: { type?: string; clusterIP?: string } | undefined,
  port: number,
): string | undefined {
  const ip = spec?.clusterIP;
  if (spec?.type === 'ExternalName' || ip === undefined) return undefined;
  const family = isIP(ip);
  if (family === 0) return undefined;
  return `http://${family === 6 ? `[${ip}]` : ip}:${port}`;
}
