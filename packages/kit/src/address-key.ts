/**
 * The key a client address is counted under by per-address limits (auth's logins, the gateway's rate limits). IPv4 (also written
 * IPv4-mapped, `::ffff:a.b.c.d`) counts per address; IPv6 per /64, because one subscriber usually
 * holds a whole /64 and could otherwise rotate through addresses to dodge the limit.
 */
export function addressKey(ip: string): string {
  const address = ip.trim().toLowerCase().split('%')[0]!;
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const hextets = expandIpv6(address);
  return hextets ? `${hextets.slice(0, 4).join(':')}::/64` : address;
}

/** The eight hextets of an IPv6 address (as lower-case hex without leading zeros), or null. */
function expandIpv6(address: string): string[] | null {
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const parts = (s: string | undefined) => (s ? s.split(':') : []);
  // An embedded IPv4 tail (`::1.2.3.4`) stands for two hextets.
  const widen = (list: string[]) =>
    list.flatMap((p) => {
      if (!p.includes('.')) return [p];
      const o = p.split('.').map(Number);
      return [((o[0]! << 8) | o[1]!).toString(16), ((o[2]! << 8) | o[3]!).toString(16)];
    });
  const head = widen(parts(halves[0]));
  const tail = widen(parts(halves[1]));
  const fill = halves.length === 2 ? 8 - head.length - tail.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== 8)) return null;
  const all = [...head, ...Array<string>(fill).fill('0'), ...tail];
  if (!all.every((h) => /^[0-9a-f]{1,4}$/.test(h))) return null;
  return all.map((h) => parseInt(h, 16).toString(16));
}
