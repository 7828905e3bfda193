import { grpcAddrVar, type ServiceName } from '../config/topology';
import type { ServiceIdentity } from '../auth/service-identity';
import { callPolicyFor, type CallPolicy } from '../grpc/call-policy';
import { peerChannel, type PeerChannel } from '../grpc/peer-channel';
import type { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import type { ServiceMetrics } from '../metrics/metrics';
import type { KitConfig } from './service-config';

/** What the kit closes on shutdown: a peer's client. */
export interface PeerClient {
  close(): void;
}

/** One Halo service this service calls over gRPC, and how the service makes its client of it. */
export interface PeerDefinition<T extends PeerClient = PeerClient> {
  /**
   * The service called (a key of `SERVICES`, listed in `GRPC_CALLS`): its address is the
   * service's `<PEER>_GRPC_ADDR` setting, and it is the audience of the service token.
   */
  service: ServiceName;
  /** The client, over the channel the kit makes (`src/grpc/clients/<peer>-<what>.ts`). */
  client: (channel: PeerChannel) => T;
}

/** A service's peers, by the name its domain knows each by. */
export type PeerDefinitions = Record<string, PeerDefinition>;

/** The clients `defineService` hands the domain as `parts.peers`, typed from the definitions. */
export type PeerClients<P extends PeerDefinitions> = { [K in keyof P]: ReturnType<P[K]['client']> };

/**
 * Each peer's client, over a channel made from the service's settings: `<PEER>_GRPC_ADDR`,
 * `GRPC_DEADLINE_MS`, the service's identity for the peer, one call policy per peer service
 * (`GRPC_RETRIES`, `GRPC_BREAKER_*`, measured in the service's metrics). Each client is closed on
 * shutdown, after everything opened later (the domain's own clients and timers).
 */
export function openPeers<P extends PeerDefinitions>(
  definitions: P | undefined,
  opts: { config: KitConfig; identity: ServiceIdentity; logger: Logger; metrics: ServiceMetrics; lifecycle: Lifecycle },
): PeerClients<P> {
  const { config, identity, logger, metrics, lifecycle } = opts;
  const policies = new Map<ServiceName, CallPolicy>();
  const clients: Record<string, PeerClient> = {};
  for (const [name, peer] of Object.entries(definitions ?? {})) {
    const service = peer.service;
    let policy = policies.get(service);
    if (!policy) policies.set(service, (policy = callPolicyFor(service, config, logger, metrics.grpcClient)));
    const address = addressOf(config, service, name);
    const client = peer.client(peerChannel({ peer: service, address, deadlineMs: config.GRPC_DEADLINE_MS, identity, policy }));
    lifecycle.register(`${service} client`, () => client.close());
    clients[name] = client;
  }
  return clients as PeerClients<P>;
}

/** The peer's `<PEER>_GRPC_ADDR`, which the service's own config shape declares (with what it calls the peer for). */
function addressOf(config: KitConfig, service: ServiceName, name: string): string {
  const variable = grpcAddrVar(service);
  const address = (config as unknown as Record<string, unknown>)[variable];
  if (typeof address !== 'string' || address === '') {
    throw new Error(`peers.${name} calls ${service}, but the service's config declares no ${variable} (docs/adding-a-service.md)`);
  }
  return address;
}
