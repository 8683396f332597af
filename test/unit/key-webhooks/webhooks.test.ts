import { Webhook } from 'standardwebhooks';
import { fromAudit, noticeEvent, noticeOnce } from '../../../gateway/webhooks/events.js';
import { WebhookSender } from '../../../gateway/webhooks/sender.js';
import { signedHeaders } from '../../../gateway/webhooks/signature.js';
import type { AuditEvent } from '../../../gateway/audit/audit-event.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('webhook signatures', () => {
  it('verify with the Standard Webhooks reference library, and not once the body or the secret differs', () => {
    const body = JSON.stringify({
      type: 'key.revoked',
      timestamp: new Date().toISOString(),
      data: { keyId: 'k' },
    });
    const headers = signedHeaders(SECRET, 'msg_1', Math.floor(Date.now() / 1000), body);
    expect(new Webhook(SECRET).verify(body, headers)).toMatchObject({ type: 'key.revoked' });
    expect(() => new Webhook(SECRET).verify(body.replace('"k"', '"j"'), headers)).toThrow();
    const other = `whsec_${Buffer.alloc(32, 8).toString('base64')}`;
    expect(() => new Webhook(other).verify(body, headers)).toThrow();
    // An old timestamp is refused by the receiver (replays), as the format intends.
    const stale = signedHeaders(SECRET, 'msg_1', Math.floor(Date.now() / 1000) - 3600, body);
    expect(() => new Webhook(SECRET).verify(body, stale)).toThrow();
  });
});

describe('webhook events', () => {
  const audit = (action: AuditEvent['action'], detail?: Record<string, string>): AuditEvent => ({
    id: 'e1',
    at: new Date().toISOString(),
    action,
    keyId: 'abc',
    keyName: 'job',
    keyStart: 'tgp_abcd',
    owner: 'alice',
    actor: 'root',
    ...(detail === undefined ? {} : { detail }),
  });

  it('come from the audit trail: a revocation by offboarding is told apart; refusals are not sent', () => {
    expect(fromAudit(audit('key.deleted'))?.type).toBe('key.revoked');
    expect(fromAudit(audit('key.deleted', { reason: 'user offboarded' }))?.type).toBe('key.offboarded');
    expect(fromAudit(audit('key.leaked', { url: 'https://example.com/x' }))).toEqual({
      type: 'key.leaked',
      owner: 'alice',
      data: {
        keyId: 'abc',
        keyName: 'job',
        keyStart: 'tgp_abcd',
        owner: 'alice',
        actor: 'root',
        detail: { url: 'https://example.com/x' },
      },
    });
    expect(fromAudit(audit('key.refused'))).toBeUndefined();
    expect(fromAudit(audit('identity.created'))).toBeUndefined();
  });

  it("from the rate limiter, name the key's identity when its budget was the identity's", () => {
    const grant = {
      id: 'k1',
      owner: 'alice',
      module: 'platform' as const,
      roles: ['viewer'],
      identity: { name: 'acme', account: '@0123456789abcdef01234567' },
    };
    expect(
      noticeEvent({ type: 'credits.low', grant, identity: 'acme', detail: { amount: 10, remaining: 1 } }),
    ).toEqual({
      type: 'credits.low',
      owner: 'alice',
      data: { keyId: 'k1', owner: 'alice', identity: 'acme', detail: { amount: 10, remaining: 1 } },
    });
  });
});

describe('how often a notice is told', () => {
  it('a breach once a minute per key and limit; credits marks once an hour per budget and period', () => {
    const grant = {
      id: 'k1',
      owner: 'alice',
      module: 'platform' as const,
      roles: ['viewer'],
      countsAs: 'k0',
    };
    const breach = (limit: string) =>
      noticeOnce({ type: 'key.rate_limited', grant, detail: { limit, requests: 1, windowSeconds: 1 } });
    expect(breach('burst')).toEqual({ key: 'rl:k1::burst', seconds: 60 });
    expect(breach('per-day').key).not.toBe(breach('burst').key);
    // Calls of mixed prices can cross "spent" twice in a period: one notice (the roll chain's budget).
    const spent = (refillsAt?: string) =>
      noticeOnce({
        type: 'credits.exhausted',
        grant,
        detail: { amount: 10, remaining: 0, ...(refillsAt === undefined ? {} : { refillsAt }) },
      });
    expect(spent()).toEqual({ key: 'credits.exhausted:k0:all', seconds: 3600 });
    expect(spent('2026-12-01T00:00:00.000Z').key).toBe('credits.exhausted:k0:2026-12-01T00:00:00.000Z');
    const ofIdentity = noticeOnce({
      type: 'credits.low',
      grant,
      identity: 'acme',
      detail: { amount: 10, remaining: 1 },
    });
    expect(ofIdentity.key).toBe('credits.low:acme:all');
  });
});

describe('webhook destinations', () => {
  it('refuse loopback, private, link-local and metadata addresses unless the gateway allows them', async () => {
    const sender = new WebhookSender({ allowedCidrs: [], allowHttp: true, timeoutMs: 1_000 });
    const inward = [
      'http://127.0.0.1/h',
      'http://10.0.0.5/h',
      'http://172.20.1.1/h',
      'http://192.168.1.1/h',
      'http://169.254.169.254/latest',
      'http://100.64.0.1/h',
      'http://[::1]/h',
      'http://[fd00::1]/h',
      'http://[fe80::1]/h',
      'http://[::ffff:10.0.0.1]/h',
      'http://0.0.0.0/h',
      'http://[64:ff9b::a9fe:a9fe]/h',
      'http://198.18.0.1/h',
      'http://224.0.0.1/h',
    ];
    for (const url of inward) expect([url, sender.refusal(new URL(url)) !== undefined]).toEqual([url, true]);
    expect(sender.refusal(new URL('https://203.0.113.7/h'))).toBeUndefined();
    expect(sender.refusal(new URL('https://hooks.example.com/h'))).toBeUndefined();
    // A name is checked on the address it resolves to, when connecting: nothing is sent.
    expect(await sender.send('http://localhost:9/h', {}, '{}')).toEqual({
      ok: false,
      error: 'not allowed: the host resolves to an address webhooks may not reach',
    });
    // An address literal is refused when sending too (the settings may have changed), unconnected.
    expect(await sender.send('https://127.0.0.1:9/h', {}, '{}')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^not allowed: 127\.0\.0\.1 is a loopback/),
    });
    await sender.close();
    // http:// only where the gateway allows it, checked again when sending.
    const strict = new WebhookSender({ allowedCidrs: [], timeoutMs: 1_000 });
    expect(strict.refusal(new URL('http://hooks.example.com/h'))).toMatch(/must be https/);
    expect(await strict.send('http://hooks.example.com/h', {}, '{}')).toEqual({
      ok: false,
      error: 'not allowed: it must be https:// (this gateway sends webhooks over TLS only)',
    });
    await strict.close();
    const allowing = new WebhookSender({ allowedCidrs: ['10.0.0.0/8'], allowHttp: true, timeoutMs: 1_000 });
    expect(allowing.refusal(new URL('http://10.0.0.5/h'))).toBeUndefined();
    expect(allowing.refusal(new URL('http://127.0.0.1/h'))).toMatch(/loopback, private or link-local/);
    await allowing.close();
    const onlyOurs = new WebhookSender({
      allowedCidrs: [],
      allowedHosts: ['hooks.example.com', '*.ops.example.org'],
      timeoutMs: 1_000,
    });
    expect(onlyOurs.refusal(new URL('https://hooks.example.com/h'))).toBeUndefined();
    expect(onlyOurs.refusal(new URL('https://a.ops.example.org/h'))).toBeUndefined();
    expect(onlyOurs.refusal(new URL('https://evil.example.net/h'))).toMatch(/not among the hosts/);
    expect(onlyOurs.refusal(new URL('https://ops.example.org.evil.net/h'))).toMatch(/not among the hosts/);
    await onlyOurs.close();
  });
});
