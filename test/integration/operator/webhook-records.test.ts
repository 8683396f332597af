import { request } from 'node:https';
import { connect, type Socket } from 'node:net';
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
    expect(answer.status?.message).toBe(
      `tollgate sidecar: no Workflow resource lets namespace 'team-mallory' serve workflow '${workflow}'; an administrator names the workflow in one (spec.workflow, spec.owner) and lists 'team-mallory' in its spec.namespaces`,
    );
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

  it('refuses a pod it cannot read (containers null, as a review carries one before validation), and serves on', async () => {
    // The API server shows the webhook a pod before validating it; the port also takes anyone's.
    for (const spec of [
      {},
      { containers: null },
      { containers: [null] },
      { containers: [{ name: 'a', ports: 7 }] },
    ]) {
      const body = review('team-a', workflow);
      (body.request.object as { spec: unknown }).spec = spec;
      const answer = await admit(body);
      expect([JSON.stringify(spec), answer.allowed]).toEqual([JSON.stringify(spec), false]);
      expect(answer.status?.message).toMatch(
        /^tollgate sidecar: the pod could not be read \(.+\); send a valid Pod$/,
      );
    }
    expect((await admit(review('team-a', workflow))).allowed).toBe(true);
  });

  it('refuses a workflow that has no record in the same words, saying who makes one', async () => {
    const answer = await admit(review('team-a', `${workflow}-none`));
    expect(answer.allowed).toBe(false);
    expect(answer.status?.message).toBe(
      `tollgate sidecar: no Workflow resource lets namespace 'team-a' serve workflow '${workflow}-none'; an administrator names the workflow in one (spec.workflow, spec.owner) and lists 'team-a' in its spec.namespaces`,
    );
  });

  it('answers 503 to reviews past what it holds in flight, in all or from one address, unread; the API server’s still pass', async () => {
    const MiB = 1024 * 1024;
    /** What a held review sends: just under one review's worth. */
    const HELD = 4 * MiB - 100 * 1024;
    /** A POST from `from` of `size` bytes, `sent` of them now and the rest when `finish` is called. */
    const post = (from: string, size: number, sent: number) => {
      let finish = () => undefined as void;
      const answered = new Promise<{ status: number; text: string; retryAfter?: string }>(
        (resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              localAddress: from,
              port,
              path: MUTATE_PATH,
              method: 'POST',
              ca,
              servername: 'localhost',
            },
            (res) => {
              let text = '';
              res.on('data', (d: Buffer) => (text += d.toString()));
              res.on('end', () =>
                resolve({
                  status: res.statusCode ?? 0,
                  text,
                  ...(typeof res.headers['retry-after'] === 'string'
                    ? { retryAfter: res.headers['retry-after'] }
                    : {}),
                }),
              );
            },
          );
          req.on('error', reject);
          req.setHeader('content-length', String(size));
          req.write(Buffer.alloc(sent, 0x20));
          finish = () => void req.end(Buffer.alloc(size - sent, 0x20));
        },
      );
      return { answered, finish: () => finish() };
    };
    /** Until the server holds `bytes` of reviews in flight (their bodies take a moment to arrive). */
    const holding = async (bytes: number) => {
      const deadline = Date.now() + 20_000;
      while (server.inFlightBytes < bytes) {
        if (Date.now() > deadline)
          throw new Error(`the server holds ${server.inFlightBytes} bytes, not ${bytes}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // Four callers each send 3.9 MiB and hold their reviews open: 15.6 of the 16 MiB in flight.
    const held = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'].map((from) =>
      post(from, HELD + 1, HELD),
    );
    await holding(4 * HELD);
    // A fifth caller is answered at once, without its body being read.
    const refused = await post('127.0.0.6', MiB, 0).answered;
    expect([refused.status, refused.retryAfter]).toEqual([503, '1']);
    expect(refused.text).toMatch(/holds \d+ bytes of reviews in flight; retry in a moment/);
    // A Pod's review from the API server still fits beside them.
    expect((await admit(review('team-a', workflow))).allowed).toBe(true);
    // Once answered (not reviews at all: 400), their bytes are let go, and the next is read.
    for (const h of held) h.finish();
    for (const h of held) expect((await h.answered).status).toBe(400);
    const next = post('127.0.0.6', MiB, 0);
    next.finish();
    expect((await next.answered).status).toBe(400);

    // One address holds one review's worth: its second is refused while another address's is read.
    const one = post('127.0.0.7', HELD + 1, HELD);
    await holding(HELD);
    const second = post('127.0.0.7', MiB, 0);
    second.finish();
    expect((await second.answered).status).toBe(503);
    const elsewhere = post('127.0.0.8', MiB, 0);
    elsewhere.finish();
    expect((await elsewhere.answered).status).toBe(400);
    one.finish();
    expect((await one.answered).status).toBe(400);

    // One larger than a Pod's review can be is refused for its size, and the answer arrives while
    // its body is still being sent.
    const huge = post('127.0.0.9', 5 * MiB, 2 * MiB);
    const tooLarge = await huge.answered;
    expect([tooLarge.status, tooLarge.text]).toEqual([
      400,
      `not an AdmissionReview: larger than ${4 * MiB} bytes\n`,
    ]);
  });

  it('takes at most 512 connections from one address, counted before the TLS handshake; others still connect', async () => {
    const open = (from: string) =>
      new Promise<{ socket: Socket; closed: Promise<void> }>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, localAddress: from }, () =>
          resolve({ socket, closed: new Promise((r) => socket.once('close', () => r())) }),
        );
        socket.on('error', () => undefined);
        socket.once('error', reject);
      });
    const idle = [];
    for (let i = 0; i < 512; i++) idle.push(await open('127.0.0.10'));
    // The 513th is closed while the 512 idle ones are still open: by the share, not by the
    // handshake time.
    const extra = await open('127.0.0.10');
    await extra.closed;
    expect(idle.every(({ socket }) => !socket.destroyed)).toBe(true);
    // The API server, from its own address, is answered meanwhile.
    expect((await admit(review('team-a', workflow))).allowed).toBe(true);
    // Idle sockets that never start TLS are cut once the handshake time (5 s) runs out.
    await Promise.all(idle.map(({ closed }) => closed));
  });
});
