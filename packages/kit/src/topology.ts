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
} as const;

/** The dev OpenID provider that `npm start` runs on loopback (never in production). */
export const DEV_OIDC_PORT = 4009;

export type ServiceName = keyof typeof SERVICES;
export const SERVICE_NAMES = Object.keys(SERVICES) as ServiceName[];

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
  chat: [],
};

/** The processes that call `name` over gRPC. */
export const grpcCallersOf = (name: ServiceName): (ServiceName | 'gateway')[] =>
  (Object.keys(GRPC_CALLS) as (ServiceName | 'gateway')[]).filter((from) => GRPC_CALLS[from].includes(name));
