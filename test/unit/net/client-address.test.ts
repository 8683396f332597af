import type { IncomingMessage } from 'node:http';
import { CidrAllowlist } from '../../../common/net/cidr.js';
import { loadGatewayConfig } from '../../../gateway/config.js';
import { senderOf, clientAddress, NO_PROXIES } from '../../../gateway/http/client-address.js';

const request = (peer: string, forwarded?: string): IncomingMessage =>
  ({
    socket: { remoteAddress: peer },
    headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
  }) as unknown as IncomingMessage;

describe('the client address', () => {
  const ingress = { hops: 1, proxies: new CidrAllowlist(['10.244.0.0/16']) };

  it('is the X-Forwarded-For entry a trusted proxy added', () => {
    expect(clientAddress(request('10.244.1.5', '203.0.113.9'), ingress)).toBe('203.0.113.9');
    // Entries on the left are the client's own words.
    expect(clientAddress(request('10.244.1.5', '10.0.0.7, 203.0.113.9'), ingress)).toBe('203.0.113.9');
  });

  it('is the peer itself when the peer is not a trusted proxy, whatever it forwards', () => {
    // A pod calling the gateway's Service or NodePort directly.
    expect(clientAddress(request('10.1.2.3', '10.0.0.7'), ingress)).toBe('10.1.2.3');
    expect(clientAddress(request('10.244.1.5', '10.0.0.7'), NO_PROXIES)).toBe('10.244.1.5');
  });

  it('walks back only through trusted proxies, at most the configured hops', () => {
    const two = { hops: 2, proxies: new CidrAllowlist(['10.244.0.0/16', '192.168.0.0/16']) };
    expect(clientAddress(request('10.244.1.5', '203.0.113.9, 192.168.1.1'), two)).toBe('203.0.113.9');
    // The second hop is not a proxy: it is the client, and what it forwarded is not believed.
    expect(clientAddress(request('10.244.1.5', '10.0.0.7, 198.51.100.4'), two)).toBe('198.51.100.4');
    expect(clientAddress(request('10.244.1.5', '10.0.0.7, 192.168.1.1, 192.168.1.2'), two)).toBe(
      '192.168.1.1',
    );
  });

  it('refuses settings that trust everyone, or trust proxies from nowhere in particular', () => {
    const load = (overrides: Record<string, unknown>) => () => loadGatewayConfig({ env: {}, overrides });
    expect(load({ trustedProxies: 1 })).toThrow(/trustedProxyCidrs/);
    expect(load({ trustedProxies: 1, trustedProxyCidrs: ['0.0.0.0/0'] })).toThrow(/\/0 trusts every caller/);
    expect(load({ trustedProxies: 1, trustedProxyCidrs: ['::/0'] })).toThrow(/\/0 trusts every caller/);
    expect(load({ trustedProxies: 1, trustedProxyCidrs: ['nope'] })).toThrow(/a CIDR/);
    expect(
      loadGatewayConfig({
        env: { TOLLGATE_TRUSTED_PROXIES: '1', TOLLGATE_TRUSTED_PROXY_CIDRS: '10.244.0.0/16, fd00::/8' },
      }).trustedProxyCidrs,
    ).toEqual(['10.244.0.0/16', 'fd00::/8']);
  });
});

describe('a network allowlist', () => {
  it('admits an IPv4 client only through IPv4 entries, or IPv4-mapped ones written as such', () => {
    expect(new CidrAllowlist(['::/0']).allows('10.1.2.3')).toBe(false);
    expect(new CidrAllowlist(['::/0']).allows('::ffff:10.1.2.3')).toBe(false);
    expect(new CidrAllowlist(['::ffff:0:0/96']).allows('10.1.2.3')).toBe(true);
    expect(new CidrAllowlist(['::ffff:10.0.0.0/104']).allows('10.1.2.3')).toBe(true);
    expect(new CidrAllowlist(['::ffff:10.0.0.0/104']).allows('11.1.2.3')).toBe(false);
    expect(new CidrAllowlist(['10.0.0.0/8']).allows('::ffff:10.1.2.3')).toBe(true);
  });

  it('admits an IPv6 client only through IPv6 entries', () => {
    expect(new CidrAllowlist(['::/0']).allows('2001:db8::1')).toBe(true);
    expect(new CidrAllowlist(['0.0.0.0/0']).allows('2001:db8::1')).toBe(false);
    expect(new CidrAllowlist(['2001:db8::/32']).allows('2001:db9::1')).toBe(false);
    expect(new CidrAllowlist(['10.0.0.0/8']).allows(undefined)).toBe(false);
  });
});

describe('senderOf', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    // Link-local, unique-local (a cluster's pod network: a node's pods share a /64) and NAT64
    // (every IPv4 client behind it) addresses are each their own.
    ['fe80::1%eth0', 'fe80::1'],
    ['fd00:10:244:1::5', 'fd00:10:244:1::5'],
    ['FC00::7', 'fc00::7'],
    ['64:ff9b::a01:203', '64:ff9b::a01:203'],
    ['::1', '0:0:0:0::/64'],
    ['unknown', 'unknown'],
  ])('%s is held as %s', (address, sender) => {
    expect(senderOf(address)).toBe(sender);
  });
});
