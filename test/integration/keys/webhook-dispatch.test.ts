import { AdminRights } from '../../../gateway/webhooks/admin-rights.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { ApiKeyStore } from '../../../common/apikey/store.js';
import { createLogger } from '../../../common/logger.js';
import type { Webhook } from '../../../common/resources/webhook.js';
import { DeliveryQueue } from '../../../gateway/webhooks/deliveries.js';
import { WebhookDispatcher } from '../../../gateway/webhooks/dispatcher.js';
import { WebhookInbox } from '../../../gateway/webhooks/inbox.js';
import { WebhookSender } from '../../../gateway/webhooks/sender.js';
import type { WebhookStore } from '../../../gateway/webhooks/store.js';
import { redis } from '../../harness/index.js';
import { waitUntil } from '../../harness/wait.js';
import { testSealer } from '../signing.js';

/**
 * One user's endpoints hold none of the others' deliveries: any user may register endpoints that
 * accept and never answer, and fill their queues (their own key events, replays).
 */
describe('webhook deliveries past a slow endpoint', () => {
  let client: Redis;
  let slow: Server;
  let fast: Server;
  const held: Socket[] = [];
  const heldAnswers: ServerResponse[] = [];
  let slowSeen = 0;
  const fastSeen: number[] = [];

  const listen = (server: Server) =>
    new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    );

  /** An endpoint of `owner`'s on loopback, for key.revoked. */
  const endpoint = (name: string, port: number, owner: string): Webhook => ({
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'Webhook',
    metadata: { name },
    spec: { owner, url: `http://127.0.0.1:${port}/hooks`, events: ['key.revoked'], secretVersion: 1 },
  });

  /** A dispatcher over `endpoints` (loopback allowed), polled by hand: nothing runs on a timer. */
  const dispatcherOf = async (endpoints: Webhook[]) => {
    const queue = new DeliveryQueue(client, 3_600);
    const refused: string[] = [];
    const dispatcher = new WebhookDispatcher(
      {
        store: { list: async () => endpoints } as unknown as WebhookStore,
        queue,
        sender: new WebhookSender({ allowedCidrs: ['127.0.0.0/8'], allowHttp: true, timeoutMs: 30_000 }),
        inbox: new WebhookInbox(client, () => undefined),
        sealer: await testSealer(),
        redis: client,
        keys: {} as ApiKeyStore,
        admins: new AdminRights(client, createLogger('webhooks', 'silent')),
        shareRefused: (share, team) => void refused.push(`${share} ${team}`),
        log: createLogger('webhooks', 'silent'),
      },
      { retrySeconds: [60], pollMs: 60_000, expiringScanMs: 3_600_000 },
    );
    return { queue, dispatcher, refused };
  };

  beforeAll(async () => {
    client = new Redis((await redis('webhook-dispatch')).url, { maxRetriesPerRequest: 1 });
    slow = createServer((req, res) => {
      slowSeen++;
      req.resume();
      heldAnswers.push(res);
    });
    slow.on('connection', (s: Socket) => held.push(s));
    fast = createServer((req, res) => {
      fastSeen.push(Date.now());
      req.resume();
      res.end('ok');
    });
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    await new Promise((r) => slow.close(r));
    await new Promise((r) => fast.close(r));
    client.disconnect();
  });

  it('a slow endpoint takes two sends of a replica at a time; the others’ messages go past its queue', async () => {
    const [slowPort, fastPort] = [await listen(slow), await listen(fast)];
    const endpoints = [
      endpoint('webhook-slow', slowPort, 'mallory'),
      endpoint('webhook-fast', fastPort, 'alice'),
    ];
    const { queue, dispatcher } = await dispatcherOf(endpoints);
    try {
      // Mallory's 60 messages come due first; alice's one after them.
      const now = Date.now() - 10_000;
      for (let i = 0; i < 60; i++) await queue.enqueue('webhook-slow', 'key.revoked', '{}', now + i);
      const alices = await queue.enqueue('webhook-fast', 'key.revoked', '{}', now + 100);
      await dispatcher.poll();
      // Hers is sent while his two hang for their 30 s.
      await waitUntil(
        'alice’s message delivered',
        async () =>
          (await queue.list('webhook-fast', 5)).find((d) => d.id === alices)?.status === 'delivered',
        { timeoutMs: 20_000 },
      );
      expect(fastSeen).toHaveLength(1);
      expect(slowSeen).toBe(2);
      // His others are put back, not attempted: no attempt counted, none failed.
      const his = await queue.list('webhook-slow', 100);
      expect(his.filter((d) => d.attempts > 0)).toHaveLength(0);
      expect(his.filter((d) => d.status !== 'pending')).toHaveLength(0);
      // A message already due is not replayed again (a replay loop would be a POST cannon).
      const pending = his.at(-1);
      expect(await queue.replay('webhook-slow', pending?.id ?? '')).toBe('pending');
    } finally {
      for (const r of heldAnswers) r.destroy();
      await dispatcher.stop();
    }
  }, 60_000);

  it("one owner's ten endpoints that never answer take an eighth of the replica's sends; others' deliveries go past them", async () => {
    // Both listen since the test before.
    const slowPort = (slow.address() as AddressInfo).port;
    const fastPort = (fast.address() as AddressInfo).port;
    // Four users with ten endpoints each that never answer, and alice's that does.
    const stalling = ['mallory', 'oscar', 'trudy', 'eve'].flatMap((owner) =>
      Array.from({ length: 10 }, (_, i) => endpoint(`webhook-${owner}-${i}`, slowPort, owner)),
    );
    const endpoints = [...stalling, endpoint('webhook-alice', fastPort, 'alice')];
    const { queue, dispatcher, refused } = await dispatcherOf(endpoints);
    const seenBefore = slowSeen;
    const fastBefore = fastSeen.length;
    try {
      // Three messages for each stalling endpoint come due first; alice's after them.
      const now = Date.now() - 10_000;
      let at = 0;
      for (const w of stalling)
        for (let i = 0; i < 3; i++) await queue.enqueue(w.metadata.name, 'key.revoked', '{}', now + at++);
      const alices = await queue.enqueue('webhook-alice', 'key.revoked', '{}', now + at + 100);
      await dispatcher.poll();
      await sleep(1_000);
      // Each stalling owner holds at most 8 sends (an eighth of the replica's): two per endpoint,
      // 80 in all, would have left alice none.
      expect(slowSeen - seenBefore).toBe(4 * 8);
      expect(fastSeen.length - fastBefore).toBe(1);
      expect((await queue.list('webhook-alice', 5)).find((d) => d.id === alices)?.status).toBe('delivered');
      // Of one owner's endpoints, 8 sends are made; the rest wait in the queue.
      const mallorys = await Promise.all(
        stalling.filter((w) => w.spec.owner === 'mallory').map((w) => queue.list(w.metadata.name, 10)),
      );
      expect(mallorys.flat().filter((d) => d.status === 'pending')).toHaveLength(30);
      expect(mallorys.flat().filter((d) => d.attempts > 0)).toHaveLength(0);
      // Each send put off is counted against the owner whose share is full, never alice's.
      expect([...new Set(refused)].sort()).toEqual(
        ['eve', 'mallory', 'oscar', 'trudy'].map((owner) => `webhook_sends ${owner}`),
      );
    } finally {
      for (const r of heldAnswers) r.destroy();
      await dispatcher.stop();
    }
  }, 60_000);
});
