/**
 * The one table of Halo's services and their default ports. The launcher, the gateway, the
 * composition script and the chart defaults all read it, so ports never drift between files.
 * Adding a service starts here (docs/adding-a-service.md).
 */
export const GATEWAY_PORT = 4000;
/**
 * The gateway's Prometheus metrics (`METRICS_PORT`), apart from its public port so an ingress to
 * the gateway never exposes them. 9464 is OpenTelemetry's Prometheus exporter port, and far from
 * the 4000/5000 blocks: a launcher's port offset never lands it on another process's port.
 */
export const GATEWAY_METRICS_PORT = 9464;

export const SERVICES = {
  auth: { httpPort: 4001, grpcPort: 5001 },
  content: { httpPort: 4002, grpcPort: 5002 },
  catalog: { httpPort: 4003, grpcPort: 5003 },
  payments: { httpPort: 4004, grpcPort: 5004 },
  chat: { httpPort: 4005, grpcPort: 5005 },
  /**
   * The schema registry (docs/registry.md): internal only, no subgraph and no public REST, so the
   * gateway never routes to it; its gRPC port serves only grpc.health.v1.
   */
  registry: { httpPort: 4006, grpcPort: 5006 },
} as const;

/** The dev OpenID provider that `npm start` runs on loopback (never in production). */
export const DEV_OIDC_PORT = 4009;

export type ServiceName = keyof typeof SERVICES;
export const SERVICE_NAMES = Object.keys(SERVICES) as ServiceName[];

/** Services no client reaches through the gateway: no subgraph, no public REST route. */
export const INTERNAL_SERVICES = ['registry'] as const satisfies readonly ServiceName[];
/** A service the gateway routes to (its subgraph, its REST routes, or both). */
export type EdgeServiceName = Exclude<ServiceName, (typeof INTERNAL_SERVICES)[number]>;
export const EDGE_SERVICE_NAMES = SERVICE_NAMES.filter((n) => !(INTERNAL_SERVICES as readonly string[]).includes(n)) as EdgeServiceName[];
export const isEdgeService = (name: string): name is EdgeServiceName => (EDGE_SERVICE_NAMES as readonly string[]).includes(name);

/** The env variable that points the gateway at a service's HTTP base URL, e.g. `CONTENT_URL`. */
export const serviceUrlVar = (name: ServiceName) => `${name.toUpperCase()}_URL`;
/** The env variable that points a peer at a service's gRPC address, e.g. `CONTENT_GRPC_ADDR`. */
export const grpcAddrVar = (name: ServiceName) => `${name.toUpperCase()}_GRPC_ADDR`;

export const defaultServiceUrl = (name: ServiceName) => `http://127.0.0.1:${SERVICES[name].httpPort}`;
export const defaultGrpcAddr = (name: ServiceName) => `127.0.0.1:${SERVICES[name].grpcPort}`;

/**
 * Which gRPC servers each process calls. The per-method `access` tables beside each binding say
 * who may call what; this says whose public keys each server needs (docs/service-identity.md),
 * and so where the embedded launcher hands out keys.
 */
export const GRPC_CALLS: Readonly<Record<ServiceName | 'gateway', readonly ServiceName[]>> = {
  gateway: ['auth'],
  auth: ['content'],
  content: [],
  catalog: [],
  payments: ['catalog'],
  // Private chats' member ids are checked against content's users.
  chat: ['content'],
  // An admin's API key (the subgraph CLI) is exchanged exactly as the gateway exchanges one.
  registry: ['auth'],
};

/** The processes that call `name` over gRPC. */
export const grpcCallersOf = (name: ServiceName): (ServiceName | 'gateway')[] =>
  (Object.keys(GRPC_CALLS) as (ServiceName | 'gateway')[]).filter((from) => GRPC_CALLS[from].includes(name));

/**
 * The processes that call `name` over HTTP with a service token (docs/registry.md): every
 * service publishes its own contract to the registry and the gateway reads the supergraph.
 */
export const serviceTokenCallersOf = (name: ServiceName): (ServiceName | 'gateway')[] =>
  name === 'registry' ? ['gateway', ...SERVICE_NAMES.filter((n) => n !== 'registry')] : [];

/** Whose public keys `name` must trust (SERVICE_TRUSTED_KEYS): its gRPC and its service-token callers. */
export const trustedCallersOf = (name: ServiceName): (ServiceName | 'gateway')[] => [
  ...new Set([...grpcCallersOf(name), ...serviceTokenCallersOf(name)]),
];
