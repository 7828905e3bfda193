/**
 * What the embedded launcher needs from the kit, and nothing more: the launcher loads only this
 * (the whole kit would cost it start-up time and memory for servers it never runs), so it names
 * the modules of other folders it takes, never their entries.
 */
export { freePort, freePorts, portIsFree } from './ports';
export { generateServiceKey, type ServiceKeyPair } from '../auth/service-keys';
export { DEV_JWT_SECRET, DEV_OIDC_CLIENT_SECRET } from '../config/dev-secrets';
export { EMBEDDED_CORS_ORIGINS } from '../config/embedded-origins';
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
} from '../config/topology';
export { lockDownSql, provisionServiceRoles, roleUrl, type ServiceRole, serviceRoleSql } from '../db/db-roles';
export { COMPACT_MESSAGE, type CompactMessage } from '../process/compact';
export { EXIT_CANNOT_START } from '../process/exit-codes';
export { LATE_ENV_VAR, type LateEnvMessage } from '../process/late-env';
