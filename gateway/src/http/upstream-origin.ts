import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** Where requests to one upstream go: its host and port, and a keep-alive pool of its own. */
export interface UpstreamOrigin {
  send: typeof request;
  agent: Agent;
  hostname: string;
  port: number;
}

/**
 * The connection side of an upstream URL (http or https): one keep-alive pool, LIFO so the most
 * recently used sockets stay busy and the others time out when idle. The REST proxy
 * (src/rest/proxy.ts) and the subgraph fetcher (src/graphql/http-fetcher.ts) both send through one per upstream.
 */
export function upstreamOrigin(url: URL, maxSockets: number): UpstreamOrigin {
  const tls = url.protocol === 'https:';
  const pool = { keepAlive: true, maxSockets, scheduling: 'lifo' } as const;
  return {
    send: tls ? httpsRequest : request,
    agent: tls ? new HttpsAgent(pool) : new Agent(pool),
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : tls ? 443 : 80,
  };
}
