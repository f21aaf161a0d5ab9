// The address a request comes from: the connection's peer, or, when that peer is a proxy we trust
// (TRUSTED_PROXIES), the rightmost hop of X-Forwarded-For that is not one of our proxies. Anyone can write the
// header, so it is read only from a trusted peer, and only as far back as trusted proxies appended to it.
import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../model/errors.js';

export type TrustedProxies = BlockList;

/** An IPv4 address as IPv6 shows it (::ffff:10.0.0.1) is the IPv4 address. */
function plain(address: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m ? m[1] : address;
}

function trusts(proxies: TrustedProxies, address: string): boolean {
  const kind = isIP(address);
  return kind !== 0 && proxies.check(address, kind === 4 ? 'ipv4' : 'ipv6');
}

/** TRUSTED_PROXIES: addresses and networks (10.0.0.0/8, fd00::/8), comma-separated. */
export function trustedProxies(text: string): TrustedProxies {
  const proxies = new BlockList();
  for (const entry of text.split(',').map((e) => e.trim())) {
    const [address, bits, extra] = entry.split('/');
    const kind = isIP(address ?? '');
    const max = kind === 4 ? 32 : 128;
    if (kind === 0 || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max)))
      throw new ConfigError(
        `TRUSTED_PROXIES must be addresses or networks such as 127.0.0.1,10.0.0.0/8, got "${entry}"`,
      );
    const type = kind === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) proxies.addAddress(address, type);
    else proxies.addSubnet(address, Number(bits), type);
  }
  return proxies;
}

/**
 * The caller's address. `forwardedFor` is X-Forwarded-For as received (repeated headers joined by commas); it
 * counts only when `peer` is trusted. A hop that is not an address ends the walk at the last trusted one.
 */
export function callerAddress(peer: string, forwardedFor: string | undefined, proxies?: TrustedProxies): string {
  let caller = plain(peer);
  if (!proxies || !forwardedFor || !trusts(proxies, caller)) return caller;
  const hops = forwardedFor.split(',').map((h) => plain(h.trim()));
  for (let i = hops.length - 1; i >= 0; i--) {
    if (isIP(hops[i]) === 0) break;
    caller = hops[i];
    if (!trusts(proxies, caller)) break;
  }
  return caller;
}
