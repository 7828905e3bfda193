/**
 * The one table of Halo's services and their default ports. The launcher, the gateway, the
 * composition script and the chart defaults all read it, so ports never drift between files.
 * Adding a service starts here (docs/adding-a-service.md).
 */
export const GATEWAY_PORT = 4000;

export const SERVICES = {
  auth: { httpPort: 4001, grpcPort: 5001 },
  content: { httpPort: 4002, grpcPort: 5002 },
  catalog: { httpPort: 4003, grpcPort: 5003 },
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
