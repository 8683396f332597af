// What the harness hands to tests. Field names are a contract other tests code against.
export interface RedisInfo {
  url: string; // redis://127.0.0.1:<port>
  port: number;
  tag: string; // `file:<test file>` for a file's own instance
}
export interface SentinelInfo {
  url: string; // redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<name>
  name: string;
  nodes: number[]; // data nodes' ports; the first started as the primary
  sentinels: number[];
}
export interface KubeInfo {
  kubeconfig: string; // path to a kubeconfig usable by @kubernetes/client-node and kubectl
  server: string; // https://127.0.0.1:<port>
  kubectl: string; // the kubectl to run with --kubeconfig (built at the apiserver's version)
}
/** The test cluster: a real node that runs containers (see components/cluster.ts). */
export interface ClusterInfo extends KubeInfo {
  nodeIp: string; // the node's address: the apiserver (:6443) and NodePorts answer on it
  hostIp: string; // where the tests' own calls to pods come from (as an outside Prometheus's would)
  nodeName: string;
  podCidr: string;
  serviceCidr: string;
  dnsIp: string;
  netns: string; // the node's network namespace (ip netns exec <netns> …)
  images: { tollgate: string; mlserver: string; redis: string }; // in the node's containerd
  ingress: { className: string; url: string }; // the ingress controller: its class, its NodePort from the host
  /** The platform team's Gateway (Traefik's Gateway API provider): what routes name, and its NodePort from the host. */
  gatewayApi: { gateway: { name: string; namespace: string; sectionName: string }; address: string };
  startMs: number; // how long the start took
}
export interface MinioInfo {
  endpoint: string; // http://127.0.0.1:<port>
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}
export type { VenvInfo } from './venv.js';
/** A proxy (nginx, Traefik) started with a test's configuration: where it listens, where it logs. */
export interface ProxyInfo {
  url: string;
  log: string;
}
/** A Prometheus scraping the targets it was started with, every second. */
export interface PrometheusInfo {
  url: string;
}
/** A Redis reached over TLS only, by one ACL user; clients must trust `caFile`. */
export interface RedisTlsInfo {
  url: string;
  port: number;
  caFile: string;
  user: string;
  password: string;
}
/** A Dex: its static users sign in with `password`; the client is public (PKCE, no secret). */
export interface DexInfo {
  issuer: string;
  clientId: string;
  users: Array<{ username: string; email: string; password: string; groups: string[] }>;
}
export interface DexOptions {
  /** Where Dex may send the browser back (the panels under test). */
  redirectUris: string[];
  /** Origins whose pages may call Dex's discovery and token endpoints (CORS). */
  allowedOrigins: string[];
  /** Lifetime of ID and access tokens, as Dex reads durations ("10m", "8s"). */
  tokenTtl?: string;
}
export interface MlserverInfo {
  url: string; // http://127.0.0.1:<port>
  grpcPort: number;
  metricsPort: number;
}
export type { MlserverOptions } from './components/mlserver.js';
/** An OpenTelemetry Collector taking OTLP over HTTP at `url`, writing what it gets to `log`. */
export interface CollectorInfo {
  url: string;
  log: string;
}
