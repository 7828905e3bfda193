import { resolve } from 'node:path';
import { closeRedis, openRedis, redisReady } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';
import type { Lifecycle } from '@halo/kit/process';
import { defineService } from '@halo/kit/service';
import { MemoryIdempotencyStore } from './adapters/memory/idempotency';
import { SimulatedProcessor } from './adapters/processor/simulated';
import { RedisIdempotencyStore } from './adapters/redis/idempotency';
import { refinePaymentsConfig, paymentsConfigShape, type PaymentsConfig } from './config';
import { PaymentsStore } from './db/store';
import { Idempotency, noIdempotencyStore, type IdempotencyStore } from './domain/idempotency';
import { Payments } from './domain/payments';
import { createLoaders } from './graphql/loaders';
import { paymentsSchema } from './graphql/resolvers';
import { catalogProducts } from './grpc/clients/catalog-products';
import { restManifest } from './rest/manifest';
import { restRoutes } from './rest/routes';

/** Expired entries of the in-process idempotency store are dropped this often. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * Payments (retry-safe with an Idempotency-Key, fenced by Postgres) and orders (naturally
 * idempotent): REST and the GraphQL subgraph over one domain. It calls catalog over gRPC for
 * products and serves no gRPC of its own (health only).
 */
export const paymentsService = defineService({
  name: 'payments',
  root: resolve(__dirname, '..'),
  config: paymentsConfigShape,
  refineConfig: refinePaymentsConfig,
  peers: { products: { service: 'catalog', client: catalogProducts } },
  domain: async ({ db, metrics, config, logger, lifecycle, peers: { products } }) => {
    // One namespace per database schema, so deployments (and test files) sharing a Redis never mix.
    const store = await idempotencyStore(config, `halo:${db.schema}`, logger, lifecycle);
    const processor = new SimulatedProcessor({
      latencyMs: config.PAYMENTS_PROCESSOR_LATENCY_MS,
      failureRate: config.PAYMENTS_PROCESSOR_FAILURE_RATE,
    });
    const lockMs = config.PAYMENTS_IDEMPOTENCY_LOCK_MS;
    const payments = new Payments({
      repo: new PaymentsStore(db),
      idempotency: new Idempotency(store, {
        lockMs,
        responseTtlMs: config.PAYMENTS_IDEMPOTENCY_TTL_S * 1000,
        logger,
        outcomes: metrics.counter('halo_idempotency_outcomes_total', 'Requests with an Idempotency-Key, by outcome', ['outcome']),
      }),
      processor,
      products,
      currency: config.PAYMENTS_CURRENCY,
      processorTimeoutMs: config.PAYMENTS_PROCESSOR_TIMEOUT_MS,
      lockMs,
      logger,
    });
    logger.info({ idempotencyStore: config.PAYMENTS_IDEMPOTENCY_STORE }, 'payments ready to charge');
    return { payments, processor, store };
  },
  // Payments are refused (503, fail closed) while Redis is down, so readiness fails with it.
  ready: ({ payments }) => payments.ready(),
  graphql: {
    schema: (typeDefs, { payments }) => paymentsSchema(typeDefs, payments),
    context: ({ payments }) => ({ loaders: createLoaders(payments) }),
  },
  restManifest,
  rest: ({ payments }, config) => restRoutes(payments, config.JWT_SECRET),
});

export type PaymentsService = Awaited<ReturnType<typeof paymentsService.start>>;

/**
 * The store PAYMENTS_IDEMPOTENCY_STORE names. Redis is not waited for at start-up beyond a short
 * ready check: while it is down, payments answer 503 and /readyz fails until it is back.
 */
async function idempotencyStore(config: PaymentsConfig, prefix: string, logger: Logger, lifecycle: Lifecycle): Promise<IdempotencyStore> {
  switch (config.PAYMENTS_IDEMPOTENCY_STORE) {
    case 'redis': {
      const redis = openRedis(config.REDIS_URL!, logger);
      lifecycle.register('redis', () => {
        closeRedis(redis);
      });
      if (!(await redisReady(redis))) logger.warn('redis not reachable at start-up; payments are refused until it is');
      return new RedisIdempotencyStore(redis, prefix);
    }
    case 'memory': {
      const store = new MemoryIdempotencyStore();
      const sweep = setInterval(() => store.sweep(), SWEEP_INTERVAL_MS);
      sweep.unref();
      lifecycle.register('idempotency sweep', () => clearInterval(sweep));
      return store;
    }
    case 'none':
      logger.warn(
        'PAYMENTS_IDEMPOTENCY_STORE=none: no idempotency locks or stored responses (benchmarks only); the database fence still holds',
      );
      return noIdempotencyStore;
  }
}
