import { SIDECAR_SECRET, SidecarCredentialKeeper } from '../../../operator/webhook/sidecar-credentials.js';
import { cluster, namespace, type Cluster } from './support.js';

/**
 * The sidecar's Secret, as the webhook puts it in a namespace with a guarded pod, on the harness
 * API server. The webhook port answers whoever reaches it, so a made-up review may name any
 * namespace: what is there already is never overwritten unless Tollgate made it.
 */
describe('the sidecar credential Secret', () => {
  let c: Cluster;
  let keeper: SidecarCredentialKeeper;

  beforeAll(async () => {
    c = await cluster();
    keeper = new SidecarCredentialKeeper(c.kc, (ns) => ({ TOLLGATE_REDIS_PASSWORD: `pw-${ns}` }), 0);
  });
  afterAll(() => c?.kc.close());

  const secretIn = async (ns: string) => c.core.readNamespacedSecret({ namespace: ns, name: SIDECAR_SECRET });

  it('is made where none is, and made whole again where a team changed it', async () => {
    const ns = await namespace(c, 'creds');
    await keeper.ensure(ns);
    const made = await secretIn(ns);
    expect(Buffer.from(made.data?.TOLLGATE_REDIS_PASSWORD ?? '', 'base64').toString()).toBe(`pw-${ns}`);
    await c.core.replaceNamespacedSecret({
      namespace: ns,
      name: SIDECAR_SECRET,
      body: { ...made, data: { TOLLGATE_REDIS_PASSWORD: Buffer.from('changed').toString('base64') } },
    });
    await keeper.ensure(ns);
    expect((await secretIn(ns)).data?.TOLLGATE_REDIS_PASSWORD).toBe(
      Buffer.from(`pw-${ns}`).toString('base64'),
    );
  });

  it('never overwrites another application’s Secret of that name, and says so', async () => {
    const ns = await namespace(c, 'creds-theirs');
    const theirs = Buffer.from('their own value').toString('base64');
    await c.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: SIDECAR_SECRET }, data: { TOLLGATE_REDIS_PASSWORD: theirs } },
    });
    await expect(keeper.ensure(ns)).rejects.toThrow(
      new RegExp(`namespace "${ns}" holds a Secret named ${SIDECAR_SECRET} that Tollgate did not make`),
    );
    expect((await secretIn(ns)).data?.TOLLGATE_REDIS_PASSWORD).toBe(theirs);
  });

  it('a namespace that does not exist fails once per while, not once per review', async () => {
    const missing = `creds-none-${Date.now().toString(36)}`;
    await expect(keeper.ensure(missing)).rejects.toThrow();
    // The same failure at once, without asking the API server again: it exists now, and still
    // the keeper says it failed until the while has passed.
    await c.core.createNamespace({ body: { metadata: { name: missing } } });
    await expect(keeper.ensure(missing)).rejects.toThrow();
    await expect(secretIn(missing)).rejects.toThrow();
  });
});
