import { request } from 'node:https';
import { createLogger } from '../../../common/logger.js';
import { workflowRecords } from '../../../operator/kube-sources.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { issueWebhookCertificates } from '../../../operator/webhook/certificates.js';
import { MUTATE_PATH, WebhookServer } from '../../../operator/webhook/server.js';
import { WorkflowAdmission } from '../../../operator/workflows/workflow-admission.js';
import { freePort } from '../../harness/index.js';
import { cluster, type Cluster, createWorkflow, deleteWorkflow, uniqueWorkflow } from './support.js';

/**
 * The sidecar webhook, over HTTPS as the API server calls it, with the Workflow records of the
 * harness API server: a pod that asks to guard a workflow's service from a namespace the
 * workflow's record does not admit is refused when applied, saying why (its route would never be
 * admitted, so nothing would ever reach it).
 */
describe('the sidecar webhook reads the Workflow records', () => {
  let c: Cluster;
  let server: WebhookServer;
  let port: number;
  let ca: string;
  let records: ReturnType<WorkflowAdmission['watch']>;
  const workflow = uniqueWorkflow('wh');
  const credentialsMadeIn: string[] = [];

  beforeAll(async () => {
    c = await cluster();
    await createWorkflow(c, workflow, 'alice', ['team-a']);
    const admission = new WorkflowAdmission(workflowRecords(c.kc, createLogger('test', 'silent')));
    records = admission.watch(() => []);
    await records.start(() => undefined);
    port = await freePort();
    server = new WebhookServer(
      port,
      { image: 'tollgate:test', redisUrl: 'redis://127.0.0.1:1', trustedKeys: '{"keys":[]}' },
      createLogger('webhook', 'silent'),
      new OperatorMetrics(),
      async (ns) => {
        credentialsMadeIn.push(ns);
      },
      (wf, ns) => {
        const a = admission.admit(wf, ns);
        return a.admitted ? undefined : a.message;
      },
      new Set(['tollgate-system', 'kube-system']),
    );
    const certs = issueWebhookCertificates({ service: 'localhost', namespace: 'x', validityMs: 3_600_000 });
    ca = certs.ca;
    await server.useCertificates(certs);
  });
  afterAll(async () => {
    await server?.close();
    await records?.stop();
    await deleteWorkflow(c, workflow);
    c?.kc.close();
  });

  const review = (namespace: string, wf: string) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${namespace}`,
      namespace,
      operation: 'CREATE',
      object: {
        metadata: {
          name: 'scorer',
          namespace,
          labels: {
            'tollgate.dev/inject': 'true',
            'tollgate.dev/workflow': wf,
            'tollgate.dev/service': 'scorer',
          },
        },
        spec: { containers: [{ name: 'app', image: 'app', ports: [{ containerPort: 8000 }] }] },
      },
    },
  });

  const admit = (body: unknown): Promise<{ allowed: boolean; status?: { message: string } }> =>
    new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: MUTATE_PATH, method: 'POST', ca, servername: 'localhost' },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve((JSON.parse(text) as { response: never }).response));
        },
      );
      req.on('error', reject);
      req.setHeader('content-type', 'application/json');
      req.end(JSON.stringify(body));
    });

  it('injects the sidecar where the record admits the namespace', async () => {
    const answer = await admit(review('team-a', workflow));
    expect(answer.allowed).toBe(true);
  });

  it('refuses the pod where it does not, naming no other team’s namespace', async () => {
    const answer = await admit(review('team-mallory', workflow));
    expect(answer.allowed).toBe(false);
    expect(answer.status?.message).toContain(
      `the Workflow record of workflow '${workflow}' does not list namespace 'team-mallory' in spec.namespaces`,
    );
    expect(answer.status?.message).not.toContain('team-a');
  });

  it('refuses a review naming a namespace its configuration leaves out: one the API server never sends, so forged', async () => {
    // The webhook's port takes any caller in the cluster; the API server's reviews never name these.
    for (const ns of ['kube-system', 'tollgate-system']) {
      const answer = await admit(review(ns, workflow));
      expect([ns, answer.allowed, answer.status?.message]).toEqual([
        ns,
        false,
        `tollgate sidecar: namespace "${ns}" is not guarded by this webhook`,
      ]);
    }
    expect(credentialsMadeIn).not.toContain('kube-system');
    expect(credentialsMadeIn).not.toContain('tollgate-system');
    expect(credentialsMadeIn).toContain('team-a');
  });

  it('refuses a workflow that has no record, saying who creates one', async () => {
    const answer = await admit(review('team-a', `${workflow}-none`));
    expect(answer.allowed).toBe(false);
    expect(answer.status?.message).toMatch(
      /no Workflow resource names workflow .* an administrator creates one/,
    );
  });
});
