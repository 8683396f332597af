import type { V1Pod } from '@kubernetes/client-node';
import { startingReplicas } from '../../../operator/serving/starting-replicas.js';
import { MAX_PROBE_URL, routeSchema } from '../../../common/resources/grant.js';

const SELECTOR = { 'tollgate.dev/model': 'iris' };

/** A model's pod as the webhook leaves it: the sidecar takes the port named http, and the probe. */
function pod(
  over: {
    namespace?: string;
    labels?: Record<string, string>;
    ip?: string;
    phase?: string;
    deleting?: boolean;
    hostNetwork?: boolean;
    probe?: { path?: string; port: number | string; host?: string; scheme?: string };
  } = {},
): V1Pod {
  return {
    metadata: {
      namespace: over.namespace ?? 'models',
      labels: over.labels ?? { ...SELECTOR, 'app.kubernetes.io/name': 'mlserver' },
      ...(over.deleting === true ? { deletionTimestamp: new Date() } : {}),
    },
    spec: {
      ...(over.hostNetwork === true ? { hostNetwork: true } : {}),
      containers: [
        {
          name: 'mlserver',
          ports: [{ name: 'metrics', containerPort: 8082 }],
          readinessProbe: {
            httpGet: over.probe ?? { path: '/app-health/mlserver/readiness', port: 15021 },
          },
        },
      ],
      // The webhook's sidecar is a native one: an init container that keeps running.
      initContainers: [
        { name: 'pull' },
        {
          name: 'tollgate-sidecar',
          restartPolicy: 'Always',
          ports: [
            { name: 'http', containerPort: 8080 },
            { name: 'tollgate-ops', containerPort: 15021 },
          ],
        },
      ],
    },
    status: { phase: over.phase ?? 'Running', ...(over.ip === '' ? {} : { podIP: over.ip ?? '10.1.0.7' }) },
  };
}

const NOW = 1_799_999_995_000;
const starting = (pods: V1Pod[]) =>
  startingReplicas(pods, 'models', SELECTOR, 'http', 'mlserver', NOW).map(({ until, ...r }) => {
    // At least two minutes ahead, in 30 s steps: the same replicas, the same route.
    expect(until).toBe(1_800_000_120_000);
    return r;
  });

describe('startingReplicas', () => {
  it('gives where a starting pod serves (the port its Service targets) and its readiness probe, as the kubelet asks it', () => {
    expect(starting([pod()])).toEqual([
      { url: 'http://10.1.0.7:8080', probe: 'http://10.1.0.7:15021/app-health/mlserver/readiness' },
    ]);
    expect(starting([pod({ ip: 'fd00::7', probe: { path: 'ready?full=1', port: 8080 } })])).toEqual([
      { url: 'http://[fd00::7]:8080', probe: 'http://[fd00::7]:8080/ready?full=1' },
    ]);
  });

  it('takes only the pods its Service would: its namespace and labels, running, with an address, not going away', () => {
    expect(
      starting([
        pod({ namespace: 'other' }),
        pod({ labels: { 'tollgate.dev/model': 'another' } }),
        pod({ labels: {} }),
        pod({ phase: 'Pending' }),
        pod({ ip: '' }),
        pod({ ip: 'not-an-address' }),
        pod({ deleting: true }),
        pod({ hostNetwork: true }),
      ]),
    ).toEqual([]);
    expect(starting(Array.from({ length: 9 }, (_, i) => pod({ ip: `10.1.0.${i + 1}` }))).length).toBe(4);
  });

  it('never follows a probe off the pod: its host, a path that names another host, a port it does not have, HTTPS', () => {
    expect(starting([pod({ probe: { path: '/ready', port: 8080, host: '169.254.169.254' } })])).toEqual([
      { url: 'http://10.1.0.7:8080', probe: 'http://10.1.0.7:8080/ready' },
    ]);
    const [sneaky] = starting([pod({ probe: { path: '//169.254.169.254/latest', port: 8080 } })]);
    expect(new URL(sneaky?.probe ?? '').host).toBe('10.1.0.7:8080');
    expect(starting([pod({ probe: { path: '/ready', port: 'no-such-port' } })])).toEqual([]);
    expect(starting([pod({ probe: { path: '/ready', port: 6379 } })])).toEqual([]);
    expect(starting([pod({ probe: { path: '/ready', port: 'metrics' } })])).toEqual([
      { url: 'http://10.1.0.7:8080', probe: 'http://10.1.0.7:8082/ready' },
    ]);
    expect(starting([pod({ probe: { path: '/ready', port: 8080, scheme: 'HTTPS' } })])).toEqual([]);
  });

  it('leaves out a pod whose probe URL would make the route large, however its path is encoded', () => {
    // 200 characters, each 9 once percent-encoded (a three-byte UTF-8 character).
    expect(starting([pod({ probe: { path: `/${'€'.repeat(200)}`, port: 8080 } })])).toEqual([]);
    expect(starting([pod({ probe: { path: `/${'"'.repeat(MAX_PROBE_URL)}`, port: 8080 } })])).toEqual([]);
    // The longest path taken, on an IPv6 address: a valid route entry.
    const ip = 'fd00:1234:5678:9abc:def0:1234:5678:9abc';
    const room = MAX_PROBE_URL - `http://[${ip}]:8080/`.length;
    const listed = startingReplicas(
      [pod({ ip, probe: { path: `/${'€'.repeat(Math.floor(room / 9))}`, port: 8080 } })],
      'models',
      SELECTOR,
      'http',
      'mlserver',
      NOW,
    );
    expect(listed).toHaveLength(1);
    expect(routeSchema.safeParse({ url: 'http://10.96.0.9:8080', starting: listed }).success).toBe(true);
  });
});
