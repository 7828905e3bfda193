import { ConfigError, defaultGrpcAddr, env, z } from '@halo/kit/config';
import type { ServiceConfig } from '@halo/kit/service';

/** Where the idempotency locks and stored responses live. */
export const IDEMPOTENCY_STORES = ['redis', 'memory', 'none'] as const;
export type IdempotencyStoreKind = (typeof IDEMPOTENCY_STORES)[number];

/** payments' own variables; the kit adds the ones every service reads (ports, DATABASE_URL, JWT_SECRET…). */
export const paymentsConfigShape = {
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional()
    .describe(
      'Redis for the idempotency locks and stored responses, shared by every replica (it fails closed while it is down: 503); ' +
        'required when `HALO_ENV=production`; unset: in this process',
    ),
  PAYMENTS_IDEMPOTENCY_STORE: z
    .enum(IDEMPOTENCY_STORES, { message: `must be one of ${IDEMPOTENCY_STORES.join(', ')}` })
    .optional()
    .describe(
      'where idempotency keys live; unset: `redis` with `REDIS_URL`, else `memory` (in this process: one replica); `none`: ' +
        'no idempotency layer, the database fence alone (benchmarks only; refused when `HALO_ENV=production`)',
    ),
  PAYMENTS_IDEMPOTENCY_LOCK_MS: env.int(30_000, 1).describe("how long a key's first request holds its lock"),
  PAYMENTS_IDEMPOTENCY_TTL_S: env.int(86_400, 1).describe('how long a completed response is replayed, in seconds'),
  PAYMENTS_CURRENCY: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be a three-letter ISO 4217 code such as USD')
    .default('USD')
    .describe('ISO 4217 currency of every payment'),
  PAYMENTS_PROCESSOR_LATENCY_MS: env.int(0).describe('the simulated payment processor: time per charge'),
  PAYMENTS_PROCESSOR_FAILURE_RATE: z.coerce
    .number({ message: 'must be a number from 0 to 1' })
    .min(0, 'must be a number from 0 to 1')
    .max(1, 'must be a number from 0 to 1')
    .default(0)
    .describe('the simulated payment processor: the share of charges that fail (failure injection)'),
  PAYMENTS_PROCESSOR_TIMEOUT_MS: env
    .int(10_000, 1)
    .describe('the simulated payment processor: deadline per call; after it the payment is withdrawn and the request answers 503'),
  CATALOG_GRPC_ADDR: env.str(defaultGrpcAddr('catalog')).describe("catalog's gRPC address (the products of an order)"),
};

export type PaymentsConfig = ReturnType<typeof refinePaymentsConfig>;

/** The rules across variables: which idempotency store, and what production refuses. */
export function refinePaymentsConfig(config: ServiceConfig<typeof paymentsConfigShape>) {
  const store: IdempotencyStoreKind = config.PAYMENTS_IDEMPOTENCY_STORE ?? (config.REDIS_URL ? 'redis' : 'memory');
  if (store === 'redis' && !config.REDIS_URL) {
    throw new ConfigError('Invalid configuration: REDIS_URL: is required when PAYMENTS_IDEMPOTENCY_STORE=redis (is not set)');
  }
  // A migration Job needs no store; a serving production replica must share one with its peers.
  if (config.HALO_ENV === 'production' && !config.HALO_MIGRATE_ONLY) {
    if (store === 'none') {
      throw new ConfigError(
        'Invalid configuration: PAYMENTS_IDEMPOTENCY_STORE: none is for benchmarks and is refused when HALO_ENV=production',
      );
    }
    if (store === 'memory') {
      throw new ConfigError(
        'Invalid configuration: REDIS_URL: is required when HALO_ENV=production (replicas must share the idempotency store) (is not set)',
      );
    }
  }
  return { ...config, PAYMENTS_IDEMPOTENCY_STORE: store };
}
