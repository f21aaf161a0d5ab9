// Where the server may connect when a caller chose the address: an event subscription's sink, an identity's
// OIDC issuer (its discovery document and key set). Without these rules a tenant would make the server reach what
// only the server can reach (SSRF): loopback, private networks, the cloud's metadata service. A URL must be https
// (plain http only to loopback, where loopback is allowed); every address its host resolves to is checked, on
// the connection itself (no second lookup that DNS could answer differently); IPv6 forms that carry an IPv4
// address (mapped, compatible, NAT64, 6to4, Teredo) are judged by that address. Redirects are never followed.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, isIPv4, type LookupFunction } from 'node:net';

/** What the operator allows beyond public addresses (OUTBOUND_ALLOW_LOOPBACK, OUTBOUND_ALLOW_PRIVATE). */
export interface OutboundPolicy {
  /** 127.0.0.0/8 and ::1, and plain http to them: development and tests */
  allowLoopback: boolean;
  /** private, shared, link-local and unique-local ranges: a server inside a private network */
  allowPrivate: boolean;
}

export const publicOnly: OutboundPolicy = { allowLoopback: false, allowPrivate: false };

type Range = [bytes: number[], bits: number];

const v4 = (text: string, bits: number): Range => [text.split('.').map(Number), bits];

/** Never reached, whatever the operator allows: nothing listens there, everything does, or the metadata service. */
const unusable4 = [
  v4('0.0.0.0', 8),
  v4('224.0.0.0', 3), // multicast and reserved, broadcast included
  v4('169.254.169.254', 32), // cloud metadata (AWS, GCP, Azure)
  v4('169.254.170.2', 32), // AWS ECS task metadata
  v4('100.100.100.200', 32), // Alibaba metadata
];
const loopback4 = [v4('127.0.0.0', 8)];
/** Private, shared, link-local, benchmarking and documentation ranges. */
const private4 = [
  v4('10.0.0.0', 8),
  v4('100.64.0.0', 10),
  v4('169.254.0.0', 16),
  v4('172.16.0.0', 12),
  v4('192.0.0.0', 24),
  v4('192.0.2.0', 24),
  v4('192.168.0.0', 16),
  v4('198.18.0.0', 15),
  v4('198.51.100.0', 24),
  v4('203.0.113.0', 24),
];

const v6 = (text: string, bits: number): Range => [ipv6Bytes(text)!, bits];
const loopback6 = v6('::1', 128);
/** The unspecified address, multicast, and the metadata service's IPv6 address (AWS). */
const unusable6 = [v6('::', 128), v6('ff00::', 8), v6('fd00:ec2::254', 128)];
/** Unique-local, link-local, site-local, and NAT64's local-use prefix. */
const private6 = [v6('fc00::', 7), v6('fe80::', 10), v6('fec0::', 10), v6('64:ff9b:1::', 48)];
const nat64 = v6('64:ff9b::', 96);
const nat64Local = v6('64:ff9b:1::', 48);
const sixToFour = v6('2002::', 16);
const teredo = v6('2001::', 32);

function inRange(bytes: number[], [net, bits]: Range): boolean {
  if (bytes.length !== net.length) return false;
  for (let i = 0; i < bits; i++) {
    const mask = 0x80 >> (i % 8);
    if ((bytes[i >> 3] & mask) !== (net[i >> 3] & mask)) return false;
  }
  return true;
}

/** The 16 bytes of an IPv6 address (a trailing dotted IPv4 part allowed); undefined when it is not one. */
function ipv6Bytes(text: string): number[] | undefined {
  if (isIP(text) !== 6) return undefined;
  let ip = text.replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    ip = `${ip.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return all.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

/** The IPv4 addresses an IPv6 address stands for or carries: mapped, compatible, NAT64, 6to4, Teredo. */
function embeddedIpv4(b: number[]): number[][] {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const last = b.slice(12, 16);
  const found: number[][] = [];
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) found.push(last); // ::ffff:a.b.c.d
  if (zero(0, 12) && !zero(12, 15)) found.push(last); // ::a.b.c.d (:: and ::1 are judged as IPv6)
  if (inRange(b, nat64)) found.push(last);
  if (inRange(b, nat64Local)) found.push(last, [b[6], b[7], b[9], b[10]]); // RFC 6052's /96 and /48 places
  if (inRange(b, sixToFour)) found.push(b.slice(2, 6));
  if (inRange(b, teredo))
    found.push(
      b.slice(4, 8),
      last.map((x) => x ^ 0xff),
    ); // server, client
  return found;
}

/** Why an IPv4 address (as bytes) may not be reached under the policy, or undefined. */
function ipv4Problem(bytes: number[], policy: OutboundPolicy): string | undefined {
  const text = bytes.join('.');
  if (loopback4.some((r) => inRange(bytes, r)))
    return policy.allowLoopback ? undefined : `${text} is a loopback address`;
  if (unusable4.some((r) => inRange(bytes, r))) return `${text} is not a public unicast address`;
  if (!policy.allowPrivate && private4.some((r) => inRange(bytes, r)))
    return `${text} is a private, shared or link-local address`;
  return undefined;
}

/** Why the server may not connect to this address under the policy, or undefined when it may. */
export function addressProblem(ip: string, policy: OutboundPolicy): string | undefined {
  if (isIPv4(ip)) return ipv4Problem(ip.split('.').map(Number), policy);
  const bytes = ipv6Bytes(ip);
  if (!bytes) return `${ip} is not an IP address`;
  if (inRange(bytes, loopback6)) return policy.allowLoopback ? undefined : `${ip} is a loopback address`;
  if (unusable6.some((r) => inRange(bytes, r))) return `${ip} is not a public unicast address`;
  for (const carried of embeddedIpv4(bytes)) {
    const problem = ipv4Problem(carried, policy);
    if (problem) return `${ip} carries ${problem}`;
  }
  if (!policy.allowPrivate && private6.some((r) => inRange(bytes, r)))
    return `${ip} is a unique-local or link-local address`;
  return undefined;
}

/** localhost, or a loopback address as such (not one carried inside another form). */
function isLoopbackName(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIPv4(host)) return loopback4.some((r) => inRange(host.split('.').map(Number), r));
  const bytes = ipv6Bytes(host);
  return bytes !== undefined && inRange(bytes, loopback6);
}

/** Why a URL may not be requested under the policy (its form, and its host when that is an address), or undefined. */
export function urlProblem(url: URL, policy: OutboundPolicy): string | undefined {
  if (url.username || url.password) return 'the URL must not carry a user name or password';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'http:' && !(policy.allowLoopback && isLoopbackName(host)))
    return 'the URL must use https (http only to loopback, where OUTBOUND_ALLOW_LOOPBACK=on allows it)';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'the URL must use https';
  return isIP(host) ? addressProblem(host, policy) : undefined;
}

/** The connection was not made: the address is not one the policy allows. */
export class RefusedAddress extends Error {}

/** A lookup for a connection: the host's addresses, refused when any of them is not allowed. */
export function checkedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.map((a) => addressProblem(a.address, policy)).find(Boolean);
      if (refused) return callback(new RefusedAddress(`${hostname}: ${refused}`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** The far end did not answer as asked: no answer in time, a failed connection, too large an answer. */
export class OutboundFailure extends Error {}

export interface OutboundRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  /** the largest answer body kept; a longer one fails the request */
  maxBytes: number;
  signal?: AbortSignal;
}

/**
 * One request to a URL the policy allows, on a connection to an address it allows; a redirect is answered as
 * the status it is, never followed. Throws RefusedAddress or OutboundFailure, whose messages never hold the
 * answer's body.
 */
export function outboundRequest(
  url: URL,
  policy: OutboundPolicy,
  r: OutboundRequest,
): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  const refused = urlProblem(url, policy);
  if (refused) return Promise.reject(new RefusedAddress(refused));
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const late = () => new OutboundFailure(`no answer within ${r.timeoutMs} ms`);
    // The whole exchange within timeoutMs: the socket's own timeout is for silence, and a trickle is not silent.
    const deadline = setTimeout(() => req.destroy(late()), r.timeoutMs);
    const settle =
      <T>(done: (value: T) => void) =>
      (value: T) => {
        clearTimeout(deadline);
        done(value);
      };
    resolve = settle(resolve);
    reject = settle(reject);
    const req = send(url, {
      method: r.method ?? 'GET',
      headers: { ...r.headers, ...(r.body ? { 'content-length': String(r.body.length) } : {}) },
      lookup: checkedLookup(policy),
      timeout: r.timeoutMs,
      signal: r.signal,
    });
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > r.maxBytes) req.destroy(new OutboundFailure(`the answer is larger than ${r.maxBytes} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', (e) => reject(e instanceof OutboundFailure ? e : new OutboundFailure('the answer was cut')));
    });
    req.on('timeout', () => req.destroy(late()));
    req.on('error', (e: Error) => {
      if (e instanceof RefusedAddress || e instanceof OutboundFailure) return reject(e);
      if (e.name === 'AbortError') return reject(late());
      reject(new OutboundFailure(`cannot connect (${(e as NodeJS.ErrnoException).code ?? 'connection failed'})`));
    });
    req.end(r.body);
  });
}
