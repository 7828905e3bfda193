import { resolve } from 'node:path';
import { defaultServiceUrl, serviceUrlVar, type EdgeServiceName } from '@halo/kit/config';
import { defineService } from '@halo/kit/service';
import { bootstrapAcknowledgements, bootstrapContracts } from './adapters/files/bootstrap-files';
import { refineRegistryConfig, registryConfigShape } from './config';
import { PgRegistryStore } from './db/store';
import { Registry } from './domain/registry';
import { authApiKeys } from './grpc/clients/auth-api-keys';
import { principalResolver } from './rest/principal';
import { registryRoutes } from './rest/routes';
import { studioRoutes } from './studio';
import { authorizeReader } from './domain/registry';
import { Router } from 'express';

/**
 * The schema registry (docs/registry.md): every service's published contracts, composed on each
 * publish, checked against what gateways serve and what clients used. Internal only: no subgraph,
 * no public REST; its gRPC port serves only grpc.health.v1.
 */
export const registryService = defineService({
  name: 'registry',
  root: resolve(__dirname, '..'),
  config: registryConfigShape,
  refineConfig: (config) => refineRegistryConfig(config),
  peers: { keys: { service: 'auth', client: authApiKeys } },
  domain: async ({ db, identity, config, logger, peers: { keys } }) => {
    const registry = new Registry(new PgRegistryStore(db), {
      usageWindowDays: config.REGISTRY_USAGE_WINDOW_DAYS,
      usageRetentionDays: config.REGISTRY_USAGE_RETENTION_DAYS,
      thresholdPercent: config.REGISTRY_CHECK_THRESHOLD_PERCENT,
      excludeClients: config.REGISTRY_CHECK_EXCLUDE_CLIENTS.split(',')
        .map((c) => c.trim())
        .filter(Boolean),
      operationsMaxCost: config.OPERATIONS_MAX_COST,
    });
    const urls = config as unknown as Record<string, string | undefined>;
    const urlOf = (s: string) => (urls[serviceUrlVar(s as EdgeServiceName)] ?? defaultServiceUrl(s as EdgeServiceName)).replace(/\/+$/, '');
    const composed = await registry.bootstrap(
      bootstrapContracts(config.REGISTRY_BOOTSTRAP_DIR, urlOf),
      bootstrapAcknowledgements(config.REGISTRY_BOOTSTRAP_DIR),
    );
    if (composed !== null) logger.info({ composition: composed }, 'bootstrapped from the committed composed files');
    const principalOf = principalResolver({
      identity,
      jwtSecret: config.JWT_SECRET,
      exchangeApiKey: (key) => keys.exchange(key),
      development: config.HALO_ENV === 'development',
    });
    const studio = studioRoutes({
      registry,
      principalOf,
      authorizeReader,
      exchangeApiKey: (key) => keys.exchange(key),
      jwtSecret: config.JWT_SECRET,
      windowDays: config.REGISTRY_USAGE_WINDOW_DAYS,
    });
    return { registry, principalOf, studio };
  },
  rest: ({ registry, principalOf, studio }) => Router().use(registryRoutes(registry, principalOf), studio),
});

export type RegistryService = Awaited<ReturnType<typeof registryService.start>>;
