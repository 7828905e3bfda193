import type { ServiceName } from '../config/topology';
import type { ServiceIdentity } from '../auth/service-identity';
import type { CallPolicy } from './call-policy';
import { clientChannelOptions, grpc, type CallOptions, type ServiceAuth } from './grpc';

/** `callUnary`'s options for one peer: its deadline, this service's token for it, its policy. */
export type PeerCallOptions = CallOptions & { defaultDeadlineMs: number; auth: ServiceAuth };

/** A generated gRPC client class of @halo/proto (`content.UserServiceClient`, …). */
export type GrpcClientClass<T extends grpc.Client> = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: Partial<grpc.ClientOptions>,
) => T;

/**
 * Everything a service's client of one Halo peer needs (its module in `src/grpc/clients/`), made
 * by the kit from the service's configuration (`defineService({ peers })`): where the peer is
 * (`<PEER>_GRPC_ADDR`), the deadline of a call (`GRPC_DEADLINE_MS`), this service's identity with
 * the peer as the token's audience, and the peer's call policy (retries, circuit breaker, its
 * metrics). What the client sends and how it maps the peer's messages stay the service's.
 */
export interface PeerChannel {
  /** The Halo service called: the audience of the service token, the name of the breaker and metrics. */
  readonly peer: ServiceName;
  readonly address: string;
  /** The default deadline of one call, retries included. */
  readonly deadlineMs: number;
  readonly identity: ServiceIdentity;
  /** Retries and the peer's circuit breaker; none only where a test builds a channel without one. */
  readonly policy: CallPolicy | undefined;
  /** For a read: safe to send again, so retried while the peer is unreachable. */
  readonly read: PeerCallOptions;
  /** For a call that changes something: never retried. */
  readonly write: PeerCallOptions;
  /** A generated client on the peer's address, with the kit's channel options (keepalive). */
  client<T extends grpc.Client>(generated: GrpcClientClass<T>): T;
}

/** A channel to `peer`; `defineService` makes one per declared peer from the service's settings. */
export function peerChannel(opts: {
  peer: ServiceName;
  address: string;
  deadlineMs: number;
  identity: ServiceIdentity;
  policy?: CallPolicy | undefined;
}): PeerChannel {
  const { peer, address, deadlineMs, identity, policy } = opts;
  const write: PeerCallOptions = { defaultDeadlineMs: deadlineMs, auth: { identity, audience: peer }, policy };
  return {
    peer,
    address,
    deadlineMs,
    identity,
    policy,
    read: { ...write, idempotent: true },
    write,
    client: (generated) => new generated(address, grpc.credentials.createInsecure(), clientChannelOptions),
  };
}
