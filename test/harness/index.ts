/**
 * The test harness API. Tests ask for the real components they need; the Jest global setup's
 * component manager starts each one once per run (on free loopback ports) and stops them all at
 * the end. Unit tests never call these, so they start nothing.
 *
 * CONTRACT (implemented by the foundation work; other tests code against these signatures):
 */
export interface RedisInfo {
  url: string; // redis://127.0.0.1:<port>
  port: number;
}
export interface KubeInfo {
  kubeconfig: string; // path to a kubeconfig usable by @kubernetes/client-node and kubectl
  server: string; // https://127.0.0.1:<port>
}
export interface MinioInfo {
  endpoint: string; // http://127.0.0.1:<port>
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}
export interface VenvInfo {
  python: string; // .venv/bin/python
  mlserver: string; // .venv/bin/mlserver
}

export {};
