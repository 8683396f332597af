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
// Also the special-purpose ranges (benchmarking, protocol assignments, multicast, reserved) and
// the IPv6 ones that lead back to IPv4 (NAT64 reaches 169.254.169.254 on an IPv6 cluster; 6to4).
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  INWARD.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  INWARD.addSubnet(net, bits, 'ipv6');

const inward = (address: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return INWARD.check(mapped, 'ipv4');
  return isIP(address) === 6 ? INWARD.check(address, 'ipv6') : INWARD.check(address, 'ipv4');
};

/** What one delivery attempt came to: the receiver's status, or why none came. */
export type Attempt = { ok: true; status: number } | { ok: false; status?: number; error: string };

/**
 * Why an attempt failed, in a few words: enough for an owner to fix their receiver, too little to
 * map what answers where (which names resolve, which ports are closed or filtered).
 */
function coarse(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code ?? (err as Error).name;
  if (code === 'ENOTALLOWED') return 'not allowed: the host resolves to an address webhooks may not reach';
  if (
    code === 'TimeoutError' ||
    code === 'AbortError' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT'
  )
    return 'no answer in time';
  return 'could not connect or send (the host unknown, refusing, or the connection cut)';
}

export class WebhookSender {
  private readonly agent: Agent;
  private readonly allowed: CidrAllowlist | undefined;

  private readonly hosts: readonly string[];

  private readonly timeoutMs: number;
  private readonly allowHttp: boolean;

  constructor(opts: {
    allowedCidrs: readonly string[];
    allowedHosts?: readonly string[];
    allowHttp?: boolean;
    timeoutMs: number;
  }) {
    this.timeoutMs = opts.timeoutMs;
    this.allowHttp = opts.allowHttp ?? false;
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
    if (url.protocol === 'http:' && !this.allowHttp)
      return 'it must be https:// (this gateway sends webhooks over TLS only)';
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'it must be an http(s) URL';
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

  /**
   * POSTs one delivery; a 2xx status within the timeout is a success, anything else a failure.
   * The URL is checked again (the settings may have tightened since it was registered, and an
   * address literal is never looked up), and the whole attempt, the answer's body included (at
   * most 1 KiB of it is read), has one deadline: a receiver that trickles cannot hold a slot.
   */
  async send(url: string, headers: Record<string, string>, body: string): Promise<Attempt> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, error: 'not allowed: the URL does not parse' };
    }
    const refused = this.refusal(parsed);
    if (refused !== undefined) return { ok: false, error: `not allowed: ${refused}` };
    try {
      const res = await request(parsed, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Tollgate-Webhooks', ...headers },
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await res.body.dump({ limit: 1024 }).catch(() => undefined);
      return res.statusCode >= 200 && res.statusCode < 300
        ? { ok: true, status: res.statusCode }
        : { ok: false, status: res.statusCode, error: `the receiver answered ${res.statusCode}` };
    } catch (err) {
      return { ok: false, error: coarse(err) };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
