/**
 * The kit for a small process that serves plain HTTP (the dev OpenID provider): config, logger,
 * lifecycle and `runService`, without the service wiring (express, Apollo, gRPC, pg) that the
 * whole kit loads. Everything here is also exported by `@halo/kit`.
 */
export { ConfigError, env, loadConfig, z } from './config';
export { EXIT_CANNOT_START } from './exit-codes';
export { closeHttpServer, Lifecycle, listen } from './lifecycle';
export { createLogger, type Logger } from './logger';
export { runService, type RunnableService } from './run';
export { DEV_OIDC_PORT } from './topology';
