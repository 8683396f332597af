import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, request } from 'undici';
import { CidrAllowlist } from '../../common/net/cidr.js';

/**
 * Networks a webhook may not reach unless the gateway allows them (webhookAllowedCidrs): loopback,
 * the private and link-local ranges (the cluster's pods and services, the clouds' metadata
 * services). A user registers the URL, so without this the gateway would POST wherever a tenant
 * points it. Checked on the address actually connected to, after DNS, so a name that resolves
 * inward later is refused too.
 */
const INWARD = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const)
  INWARD.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  INWARD.addSubnet(net, bits, 'ipv6');

const inward = (address: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return INWARD.check(mapped, 'ipv4');
  return isIP(address) === 6 ? INWARD.check(address, 'ipv6') : INWARD.check(address, 'ipv4');
};

/** What one delivery attempt came to: the receiver's status, or why none came. */
export type Attempt = { ok: true; status: number } | { ok: false; status?: number; error: string };

export class WebhookSender {
  private readonly agent: Agent;
  private readonly allowed: CidrAllowlist | undefined;

  private readonly hosts: readonly string[];

  constructor(opts: {
    allowedCidrs: readonly string[];
    allowedHosts?: readonly string[];
    timeoutMs: number;
  }) {
    this.allowed = opts.allowedCidrs.length === 0 ? undefined : new CidrAllowlist([...opts.allowedCidrs]);
    this.hosts = (opts.allowedHosts ?? []).map((h) => h.toLowerCase());
    const permitted = (address: string): boolean =>
      !inward(address) || (this.allowed?.allows(address) ?? false);
    this.agent = new Agent({
      connect: {
        timeout: opts.timeoutMs,
        lookup: (hostname, options, callback) => {
          dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
            if (err) return callback(err, []);
            const usable = addresses.filter((a) => permitted(a.address));
            if (usable.length === 0)
              return callback(
                Object.assign(new Error(`${hostname} resolves only to addresses webhooks may not reach`), {
                  code: 'ENOTALLOWED',
                }),
                [],
              );
            callback(null, usable);
          });
        },
      },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
  }

  /**
   * Why an endpoint's URL is refused, if it is: a host the gateway's allowedHosts leave out, or an
   * address literal webhooks may not reach (a name is checked on connect, after DNS).
   */
  refusal(url: URL): string | undefined {
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (
      this.hosts.length > 0 &&
      !this.hosts.some((h) => (h.startsWith('*.') ? host.endsWith(h.slice(1)) : host === h))
    )
      return `${host} is not among the hosts this gateway sends webhooks to (${this.hosts.join(', ')})`;
    if (isIP(host) !== 0 && inward(host) && !(this.allowed?.allows(host) ?? false))
      return `${host} is a loopback, private or link-local address, which webhooks may not reach; use a public address`;
    return undefined;
  }

  /** POSTs one delivery; a 2xx answer within the timeout is a success, anything else a failure. */
  async send(url: string, headers: Record<string, string>, body: string): Promise<Attempt> {
    try {
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Tollgate-Webhooks', ...headers },
        body,
        dispatcher: this.agent,
      });
      await res.body.dump();
      return res.statusCode >= 200 && res.statusCode < 300
        ? { ok: true, status: res.statusCode }
        : { ok: false, status: res.statusCode, error: `the receiver answered ${res.statusCode}` };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      return { ok: false, error: `${e.code ?? 'error'}: ${e.message}`.slice(0, 300) };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
