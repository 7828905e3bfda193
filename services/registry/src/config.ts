import { resolve } from 'node:path';
import { z } from 'zod';
import { MAX_OPERATION_COST } from '@halo/contracts';
import { ConfigError, defaultGrpcAddr, EDGE_SERVICE_NAMES, env, serviceUrlVar, type ServiceConfig } from '@halo/kit';

/** The registry's own variables (docs/registry.md, "Registry configuration"). */
export const registryConfigShape = {
  /** Usage in this many days blocks a breaking change. */
  REGISTRY_USAGE_WINDOW_DAYS: env.int(7, 1),
  /** A breaking change whose use is at most this share of all requests in the window passes (0: any use blocks). */
  REGISTRY_CHECK_THRESHOLD_PERCENT: z.coerce.number().min(0).max(100).default(0),
  /** Clients whose usage never blocks a change (comma-separated names, e.g. `k6,internal-tools`). */
  REGISTRY_CHECK_EXCLUDE_CLIENTS: env.str(''),
  /** Hourly usage rows are kept this many days. */
  REGISTRY_USAGE_RETENTION_DAYS: env.int(30, 1),
  /** A pushed client operation whose estimated cost (as the gateway estimates it) exceeds this is refused: `GRAPHQL_MAX_COST`'s default. */
  OPERATIONS_MAX_COST: env.int(MAX_OPERATION_COST, 1),
  /** Where the committed composed files are (the bootstrap): the repository root by default. */
  REGISTRY_BOOTSTRAP_DIR: env.str(resolve(__dirname, '../../..')),
  AUTH_GRPC_ADDR: env.str(defaultGrpcAddr('auth')),
  /** Each service's routing URL for the bootstrap (`<SERVICE>_URL`, the gateway's variables). */
  ...Object.fromEntries(EDGE_SERVICE_NAMES.map((name) => [serviceUrlVar(name), env.url()])),
};

export type RegistryConfig = ServiceConfig<typeof registryConfigShape>;

/** Keeps a retention shorter than the window (which would forget usage the checks need) from starting. */
export function refineRegistryConfig(config: RegistryConfig): RegistryConfig {
  if (config.REGISTRY_USAGE_RETENTION_DAYS < config.REGISTRY_USAGE_WINDOW_DAYS) {
    throw new ConfigError('Invalid configuration: REGISTRY_USAGE_RETENTION_DAYS: must be at least REGISTRY_USAGE_WINDOW_DAYS');
  }
  return config;
}
