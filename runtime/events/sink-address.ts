// Where events may be sent. A subscription's sink is a URL anyone with the capability chooses, and the server
// POSTs to it: without these rules it would reach what only the server can reach (SSRF): private networks, the
// cloud's metadata service, link-local addresses. The URL is checked when the subscription is made, and the
// address its host resolves to is checked at every delivery, on the connection itself (no second lookup that
// DNS could answer differently).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Never a sink, whatever the operator allows: nothing listens there, or everything does. */
const unusable = new BlockList();
unusable.addSubnet('0.0.0.0', 8, 'ipv4');
unusable.addSubnet('224.0.0.0', 3, 'ipv4'); // multicast and reserved, broadcast included
unusable.addAddress('::', 'ipv6');
unusable.addSubnet('ff00::', 8, 'ipv6');

/** Private, shared, link-local (the metadata service lives at 169.254.169.254) and unique-local addresses. */
const internal = new BlockList();
for (const [net, bits] of [
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['192.0.0.0', 24],
  ['198.18.0.0', 15],
] as const)
  internal.addSubnet(net, bits, 'ipv4');
internal.addSubnet('fc00::', 7, 'ipv6');
internal.addSubnet('fe80::', 10, 'ipv6');
internal.addSubnet('fd00:ec2::', 32, 'ipv6');

const isLoopbackHost = (host: string) => host === 'localhost' || (isIP(host) > 0 && loopback.check(host, family(host)));
const family = (ip: string) => (isIP(ip) === 6 ? 'ipv6' : 'ipv4');

/** An IPv4 address written as IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it is. */
function unmapped(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1] : ip;
}

/** Why a sink URL is refused at create, or undefined when it may be used. */
export function sinkUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'sink is not a URL';
  }
  if (url.username || url.password) return 'sink must not carry a user name or password';
  if (url.protocol === 'https:') return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'http:' && isLoopbackHost(host)) return undefined;
  return 'sink must be an https:// URL (http:// only to localhost, for local use)';
}

/** Why events may not go to this address, or undefined. */
export function addressProblem(ip: string, allowInternal: boolean): string | undefined {
  const address = unmapped(ip);
  const f = family(address);
  if (loopback.check(address, f)) return undefined;
  if (unusable.check(address, f)) return `${ip} is not a unicast address`;
  if (!allowInternal && internal.check(address, f))
    return `${ip} is a private, link-local or metadata address (EVENTS_ALLOW_PRIVATE_SINKS=on allows it)`;
  return undefined;
}

export class RefusedSink extends Error {}

/** A lookup for the delivery's connection: the host's addresses, refused when any is not allowed. */
export function checkedLookup(allowInternal: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.map((a) => addressProblem(a.address, allowInternal)).find(Boolean);
      if (refused) return callback(new RefusedSink(`${hostname}: ${refused}`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
