import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** What a Model's store may not be: the operator's own machine, and the clouds' metadata services. */
const INTERNAL = new BlockList();
INTERNAL.addSubnet('127.0.0.0', 8, 'ipv4');
INTERNAL.addSubnet('0.0.0.0', 8, 'ipv4');
INTERNAL.addSubnet('169.254.0.0', 16, 'ipv4');
INTERNAL.addAddress('::1', 'ipv6');
INTERNAL.addAddress('::', 'ipv6');
INTERNAL.addSubnet('fe80::', 10, 'ipv6');
INTERNAL.addAddress('fd00:ec2::254', 'ipv6');
INTERNAL.addAddress('fd20:ce::254', 'ipv6');
INTERNAL.addAddress('100.100.100.200', 'ipv4');

/** True for those addresses; an IPv4-mapped IPv6 address (::ffff:127.0.0.1) by the IPv4 rules too. */
export const internalAddress = (address: string): boolean =>
  isIPv4(address) ? INTERNAL.check(address, 'ipv4') : isIPv6(address) && INTERNAL.check(address, 'ipv6');
