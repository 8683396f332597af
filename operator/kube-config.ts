import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { Agent } from 'node:https';

/**
 * A KubeConfig whose API calls share one keep-alive connection pool. The client library builds a
 * new https.Agent for every request, so every call pays a fresh TLS handshake (with the client
 * certificate): at a cold start of thousands of resources that handshake is most of the work.
 */
export class PooledKubeConfig extends KubeConfig {
  private agent: Agent | undefined;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getAgent();
    if (!(fresh instanceof Agent)) return; // proxies and plain HTTP keep the library's agent
    this.agent ??= new Agent({ ...fresh.options, keepAlive: true, maxSockets: 64 });
    context.setAgent(this.agent);
  }

  /** Closes the pooled connections (on shutdown; a later call opens a new pool). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

/** In-cluster config, $KUBECONFIG or ~/.kube/config; or the given file. */
export function loadKubeConfig(file?: string): PooledKubeConfig {
  const kc = new PooledKubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}
