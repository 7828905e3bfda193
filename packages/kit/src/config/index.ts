/** Configuration: env parsing (`loadConfig`, `env`, `z`), the topology (names, ports, gRPC edges), dev secrets, browser origins. */
export { ConfigError, env, loadConfig, parseBytes, serviceConfigShape, z } from './config';
export { COMMITTED_DEV_SECRETS, DEV_JWT_SECRET, DEV_OIDC_CLIENT_SECRET, HALO_PLACEHOLDER, refuseDevSecrets } from './dev-secrets';
export { EMBEDDED_CORS_ORIGINS } from './embedded-origins';
export { effectiveOrigins, OriginList, originListField } from './origins';
export {
  defaultGrpcAddr,
  defaultServiceUrl,
  DEV_OIDC_PORT,
  EDGE_SERVICE_NAMES,
  type EdgeServiceName,
  GATEWAY_METRICS_PORT,
  GATEWAY_PORT,
  GRPC_CALLS,
  grpcAddrVar,
  grpcCallersOf,
  INTERNAL_SERVICES,
  isEdgeService,
  SERVICE_NAMES,
  type ServiceName,
  SERVICES,
  serviceTokenCallersOf,
  serviceUrlVar,
  trustedCallersOf,
} from './topology';
