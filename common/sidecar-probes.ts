import { z } from 'zod';

/**
 * The workload's own probes, run by the sidecar. In a pod the workload listens on loopback, where
 * the kubelet cannot reach it, so the injection points the workload's httpGet and tcpSocket probes
 * at the sidecar's operations port (`/app-health/<container>/<probe>`) and hands the originals
 * over in TOLLGATE_APP_PROBES, as Istio's agent does. The answer is the probe's: 200 when the
 * workload passed it, 503 otherwise.
 */
export const APP_PROBES_ENV = 'TOLLGATE_APP_PROBES';
/** The first segment of the sidecar's workload-probe paths on its operations port. */
export const APP_HEALTH_SEGMENT = 'app-health';
export const appHealthPath = (container: string, probe: string): string =>
  `/${APP_HEALTH_SEGMENT}/${container}/${probe}`;

const probeSchema = z.union([
  z.object({
    httpGet: z.object({
      path: z.string().startsWith('/').default('/'),
      port: z.number().int().min(1).max(65535),
      httpHeaders: z.array(z.object({ name: z.string(), value: z.string() })).default([]),
    }),
    timeoutSeconds: z.number().int().positive().default(1),
  }),
  z.object({
    tcpSocket: z.object({ port: z.number().int().min(1).max(65535) }),
    timeoutSeconds: z.number().int().positive().default(1),
  }),
]);
export type AppProbe = z.input<typeof probeSchema>;

/** `<container>/<probe>` → the original probe, with its port resolved to a number. */
export const appProbesSchema = z.record(z.string(), probeSchema);
export type AppProbes = z.output<typeof appProbesSchema>;

export function parseAppProbes(raw: string | undefined): AppProbes {
  if (raw === undefined || raw === '') return {};
  const parsed = appProbesSchema.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new Error(`${APP_PROBES_ENV}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
