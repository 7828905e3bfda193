/**
 * What the embedded launcher needs from the kit, and nothing more: the launcher loads only this
 * (the whole kit would cost it start-up time and memory for servers it never runs).
 */
export * from './topology';
export * from './db-roles';
export { generateServiceKey, type ServiceKeyPair } from './service-keys';
export { freePort, freePorts, portIsFree } from './ports';
export { EXIT_CANNOT_START } from './exit-codes';
export { COMPACT_MESSAGE, type CompactMessage } from './compact';
export { LATE_ENV_VAR, type LateEnvMessage } from './late-env';
export { EMBEDDED_CORS_ORIGINS } from './embedded-origins';
export { DEV_JWT_SECRET, DEV_OIDC_CLIENT_SECRET } from './dev-secrets';
