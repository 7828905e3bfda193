import { resolve } from 'node:path';
import { z } from 'zod';
import { MAX_OPERATION_COST } from '@halo/contracts';
import { ConfigError, defaultGrpcAddr, EDGE_SERVICE_NAMES, env, serviceUrlVar } from '@halo/kit/config';
import type { ServiceConfig } from '@halo/kit/service';

/** The registry's own variables (docs/registry.md, "Registry configuration"). */
export const registryConfigShape = {
  REGISTRY_USAGE_WINDOW_DAYS: env.int(7, 1).describe('usage in this many days blocks a breaking change'),
  REGISTRY_CHECK_THRESHOLD_PERCENT: z.coerce
    .number()
    .min(0)
    .max(100)
    .default(0)
    .describe('a breaking change used by at most this share of all requests in the window passes, with a note (`0`: any use blocks)'),
  REGISTRY_CHECK_EXCLUDE_CLIENTS: env
    .str('')
    .describe('client names, comma-separated, whose usage never blocks a change (load tests, internal tools: `k6,internal-tools`)'),
  REGISTRY_USAGE_RETENTION_DAYS: env
    .int(30, 1)
    .describe('days hourly usage rows and recorded checks are kept: the longest window a read (`days`) may ask; at least the window'),
  OPERATIONS_MAX_COST: env
    .int(MAX_OPERATION_COST, 1)
    .describe(
      'largest estimated cost of a client operation pushed to the registry, computed as the gateway computes it (keep it equal ' +
        "to the gateways' `GRAPHQL_MAX_COST`): a costlier one refuses the push ([docs/registry.md](docs/registry.md), " +
        '"Client operation lists")',
    ),
  REGISTRY_BOOTSTRAP_DIR: env
    .str(resolve(__dirname, '../../..'))
    .describe('where the committed composed files are read at the first start (the bootstrap)'),
  AUTH_GRPC_ADDR: env.str(defaultGrpcAddr('auth')).describe("auth's gRPC address, for exchanging an admin's API key (`npm run subgraph`)"),
  ...Object.fromEntries(
    EDGE_SERVICE_NAMES.map((name) => [
      serviceUrlVar(name),
      env.url().describe("the service's routing URL in the bootstrap (the gateway's variable); unset: `http://127.0.0.1:<its HTTP port>`"),
    ]),
  ),
};

export type RegistryConfig = ServiceConfig<typeof registryConfigShape>;

/** Keeps a retention shorter than the window (which would forget usage the checks need) from starting. */
export function refineRegistryConfig(config: RegistryConfig): RegistryConfig {
  if (config.REGISTRY_USAGE_RETENTION_DAYS < config.REGISTRY_USAGE_WINDOW_DAYS) {
    throw new ConfigError('Invalid configuration: REGISTRY_USAGE_RETENTION_DAYS: must be at least REGISTRY_USAGE_WINDOW_DAYS');
  }
  return config;
}
