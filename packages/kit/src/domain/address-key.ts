import { isIP } from 'node:net';

const MAPPED_V4 = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/**
 * One text per client address, or null when `text` is not an address written the standard way.
 * IPv4-mapped IPv6 (`::ffff:10.66.0.1`, `0:0:0:0:0:ffff:10.66.0.1`, `::ffff:a42:1`) is the IPv4
 * address; IPv6 is its RFC 5952 text (lower case, compressed: the WHATWG URL serializer), without
 * a zone (`%eth0`). Node's `isIP` decides what is an address: dotted decimal without leading
 * zeros, so `010.066.000.001` (octal to some parsers, decimal to others), `10.1` or `0x0a.0.0.1`
 * are refused rather than counted as addresses of their own.
 */
export function canonicalAddress(text: string): string | null {
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6) return null;
  const v6 = new URL(`http://[${text.split('%')[0]!}]/`).hostname.slice(1, -1);
  const mapped = MAPPED_V4.exec(v6);
  if (!mapped) return v6;
  const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** What an address that is not one (`canonicalAddress` null) counts under: one key for all of them. */
export const UNPARSED_ADDRESS = 'unparsed';

/**
 * The key a client address is counted under by per-address limits (auth's logins, the gateway's
 * rate limits), from its canonical form: IPv4 (also written IPv4-mapped) counts per address; IPv6
 * per /64, because one subscriber usually holds a whole /64 and could otherwise rotate through
 * addresses to dodge the limit. Texts that are not addresses share one key, so that writing an
 * address another way never makes a new counter.
 */
export function addressKey(ip: string): string {
  const address = canonicalAddress(ip.trim());
  if (address === null) return UNPARSED_ADDRESS;
  if (!address.includes(':')) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight hextets of a canonical IPv6 address (`canonicalAddress`: no embedded IPv4, at most one `::`). */
function expandIpv6(address: string): string[] {
  const [head = '', tail] = address.split('::');
  const parts = (s: string | undefined) => (s ? s.split(':') : []);
  const fill = tail === undefined ? 0 : 8 - parts(head).length - parts(tail).length;
  return [...parts(head), ...Array<string>(fill).fill('0'), ...parts(tail)];
}
