import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/**
 * The gateway owns `X-Forwarded-*`. A client-sent chain is believed only when the gateway's peer
 * (the socket) is one of `GATEWAY_TRUSTED_PROXIES` (the ingress in front of it); from anyone else
 * it is replaced by the socket address, so a client cannot choose the address it is counted under.
 * The chain forwarded always ends with the client address as the gateway judged it, so each
 * service believes exactly one hop (the gateway's last entry; auth only with the gateway's service
 * token, which the REST proxy attaches: src/rest/proxy.ts).
 */
export interface TrustedProxies {
  /** True when `address` (an IPv4, IPv6 or IPv4-mapped IPv6 address) is a trusted proxy. */
  has(address: string): boolean;
}

/** Named ranges, as express's `trust proxy` names them. */
const PRESETS: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

const MAPPED_V4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;
const unmapped = (address: string) => MAPPED_V4.exec(address)?.[1] ?? address;

/**
 * `GATEWAY_TRUSTED_PROXIES`: a comma list of addresses, CIDR ranges and the presets `loopback`,
 * `linklocal`, `uniquelocal`; empty → null (no proxy is trusted). Throws a message naming the bad entry.
 */
export function parseTrustedProxies(value: string): TrustedProxies | null {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries.flatMap((e) => PRESETS[e] ?? [e])) {
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= (family === 6 ? 128 : 32))) {
      throw new Error(`${JSON.stringify(entry)} is not an address, a CIDR range or one of loopback, linklocal, uniquelocal`);
    }
    list.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return {
    has(address) {
      const a = unmapped(address);
      const family = isIP(a);
      return family !== 0 && list.check(a, family === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

/**
 * The `X-Forwarded-For` the services receive. An untrusted peer: its socket address alone. A
 * trusted one: the chain it sent, cut after its right-most entry that is not itself a trusted
 * proxy (the client), so the last entry is always the client address.
 */
export function forwardedFor(header: string | string[] | undefined, peer: string, trusted: TrustedProxies | null): string {
  if (trusted === null || header === undefined || !trusted.has(peer)) return peer;
  const hops = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (hops.length === 0) return peer;
  let client = 0;
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trusted.has(hops[i]!)) {
      client = i;
      break;
    }
  }
  return hops.slice(0, client + 1).join(',');
}

/**
 * The client address as the gateway judged it: the last entry of the chain `forwardedFor` sends
 * on (the socket address unless a trusted proxy told otherwise). What per-address limits count.
 */
export function clientAddress(header: string | string[] | undefined, peer: string, trusted: TrustedProxies | null): string {
  const chain = forwardedFor(header, peer, trusted);
  const comma = chain.lastIndexOf(',');
  return comma === -1 ? chain : chain.slice(comma + 1).trim();
}

/**
 * What the gateway judged about a request's client, settled once and read by every stage that
 * needs it (the rate limits' partition, the proxy's `X-Forwarded-*`).
 */
export interface ClientOf {
  /** The `X-Forwarded-For` the services receive (`forwardedFor`). */
  readonly forwardedFor: string;
  /** Its last entry: the client address (`clientAddress`). */
  readonly address: string;
  /** The peer (the socket) is a trusted proxy: its `X-Forwarded-*` are appended to, not replaced. */
  readonly peerTrusted: boolean;
  /** The rate limits' partition for an anonymous caller, filled in by them on first use. */
  partition?: string;
}

/** Per socket (a keep-alive connection serves many requests): its peer, judged once per trust list. */
interface PeerOf {
  trusted: TrustedProxies | null;
  /** The peer itself as the client: what every request without a believed chain gets. */
  self: ClientOf;
}

const peers = new WeakMap<object, PeerOf>();
const believed = new WeakMap<IncomingMessage, ClientOf>();

/**
 * `forwardedFor` and `clientAddress` of the request, computed once: per connection when the peer
 * is not trusted (or sent no chain), else once per request.
 */
export function clientOf(req: IncomingMessage, trusted: TrustedProxies | null): ClientOf {
  const socket = req.socket;
  let peer = peers.get(socket);
  if (peer === undefined || peer.trusted !== trusted) {
    const address = socket.remoteAddress ?? '';
    const peerTrusted = trusted !== null && trusted.has(address);
    peer = { trusted, self: { forwardedFor: address, address, peerTrusted } };
    peers.set(socket, peer);
  }
  const header = req.headers['x-forwarded-for'];
  if (!peer.self.peerTrusted || header === undefined) return peer.self;
  let client = believed.get(req);
  if (client === undefined) {
    const chain = forwardedFor(header, peer.self.address, trusted);
    const comma = chain.lastIndexOf(',');
    client = { forwardedFor: chain, address: comma === -1 ? chain : chain.slice(comma + 1).trim(), peerTrusted: true };
    believed.set(req, client);
  }
  return client;
}
