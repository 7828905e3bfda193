import { ConfigError } from '@halo/kit/config';
import { testConfig } from './helpers';

/** payments' variables: the idempotency store each setting leads to, and what production refuses. */

const PROD = { HALO_ENV: 'production' };

it('defaults: the spec’s lock (30 s) and stored-response (24 h) limits, USD, an instant and reliable simulated processor', () => {
  expect(testConfig()).toMatchObject({
    PAYMENTS_IDEMPOTENCY_STORE: 'memory',
    PAYMENTS_IDEMPOTENCY_LOCK_MS: 30_000,
    PAYMENTS_IDEMPOTENCY_TTL_S: 86_400,
    PAYMENTS_CURRENCY: 'USD',
    PAYMENTS_PROCESSOR_LATENCY_MS: 0,
    PAYMENTS_PROCESSOR_FAILURE_RATE: 0,
    PAYMENTS_PROCESSOR_TIMEOUT_MS: 10_000,
    CATALOG_GRPC_ADDR: '127.0.0.1:5003',
    HTTP_PORT: 0,
  });
});

it('REDIS_URL picks Redis; without it the in-process store (development and tests)', () => {
  expect(testConfig({ REDIS_URL: 'redis://r:6379' }).PAYMENTS_IDEMPOTENCY_STORE).toBe('redis');
  expect(testConfig({ HALO_ENV: 'development' }).PAYMENTS_IDEMPOTENCY_STORE).toBe('memory');
  expect(testConfig({ PAYMENTS_IDEMPOTENCY_STORE: 'none' }).PAYMENTS_IDEMPOTENCY_STORE).toBe('none');
});

it.each([
  [PROD, /^Invalid configuration: REDIS_URL: is required when HALO_ENV=production/],
  [{ ...PROD, PAYMENTS_IDEMPOTENCY_STORE: 'memory' }, /^Invalid configuration: REDIS_URL: is required when HALO_ENV=production/],
  [
    { ...PROD, REDIS_URL: 'redis://r:6379', PAYMENTS_IDEMPOTENCY_STORE: 'none' },
    /^Invalid configuration: PAYMENTS_IDEMPOTENCY_STORE: none is for benchmarks/,
  ],
  [{ PAYMENTS_IDEMPOTENCY_STORE: 'redis' }, /^Invalid configuration: REDIS_URL: is required when PAYMENTS_IDEMPOTENCY_STORE=redis/],
  [{ PAYMENTS_IDEMPOTENCY_STORE: 'disk' }, /^Invalid configuration: PAYMENTS_IDEMPOTENCY_STORE: must be one of redis, memory, none/],
  [{ REDIS_URL: 'http://r' }, /^Invalid configuration: REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/],
  [{ PAYMENTS_PROCESSOR_FAILURE_RATE: '1.5' }, /^Invalid configuration: PAYMENTS_PROCESSOR_FAILURE_RATE: must be a number from 0 to 1/],
  [{ PAYMENTS_PROCESSOR_FAILURE_RATE: 'often' }, /^Invalid configuration: PAYMENTS_PROCESSOR_FAILURE_RATE: must be a number from 0 to 1/],
  [{ PAYMENTS_CURRENCY: 'usd' }, /^Invalid configuration: PAYMENTS_CURRENCY: must be a three-letter ISO 4217 code/],
  [{ PAYMENTS_IDEMPOTENCY_LOCK_MS: '0' }, /^Invalid configuration: PAYMENTS_IDEMPOTENCY_LOCK_MS: /],
])('%j is refused with one line naming the variable', (vars, message) => {
  expect(() => testConfig(vars)).toThrow(ConfigError);
  expect(() => testConfig(vars)).toThrow(message);
});

it('production with Redis is fine; a migration Job (HALO_MIGRATE_ONLY) needs no store', () => {
  expect(testConfig({ ...PROD, REDIS_URL: 'rediss://r:6380' }).PAYMENTS_IDEMPOTENCY_STORE).toBe('redis');
  expect(() => testConfig({ ...PROD, HALO_MIGRATE_ONLY: 'true' })).not.toThrow();
});
