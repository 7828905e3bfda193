import { GATEWAY_METRICS_PORT } from '@halo/kit/config';
import { loadGatewayConfig } from '../src/config';

/** The edge's settings: defaults as documented, bad values refused with the variable's name. */

it('defaults: depth 7, cost 1000, list size 10, 15 aliases, 1000 tokens, batches of 10, APQ kept a day, in-process, in-flight dedupe on, 32 MiB response cache', () => {
  const c = loadGatewayConfig({});
  expect({
    depth: c.GRAPHQL_MAX_DEPTH,
    cost: c.GRAPHQL_MAX_COST,
    listSize: c.GRAPHQL_DEFAULT_LIST_SIZE,
    aliases: c.GRAPHQL_MAX_ALIASES,
    tokens: c.GRAPHQL_MAX_TOKENS,
    batch: c.GRAPHQL_MAX_BATCH,
    apqTtl: c.GRAPHQL_APQ_TTL_S,
    planCache: c.GRAPHQL_QUERY_PLAN_CACHE_MIB,
    redis: c.REDIS_URL,
    prefix: c.REDIS_KEY_PREFIX,
    trusted: c.GRAPHQL_TRUSTED_DOCUMENTS,
    dedupe: c.GRAPHQL_DEDUPE_INFLIGHT,
    responseCache: c.GRAPHQL_RESPONSE_CACHE_MIB,
  }).toEqual({
    depth: 7,
    cost: 1000,
    listSize: 10,
    aliases: 15,
    tokens: 1000,
    batch: 10,
    apqTtl: 86_400,
    planCache: 30,
    redis: undefined,
    prefix: 'halo:gateway:',
    trusted: undefined,
    dedupe: true,
    responseCache: 32,
  });
});

it('reads them from the environment', () => {
  const c = loadGatewayConfig({
    GRAPHQL_MAX_DEPTH: '5',
    GRAPHQL_MAX_COST: '250',
    REDIS_URL: 'rediss://cache:6380',
    GRAPHQL_MAX_ALIASES: '0',
    GRAPHQL_DEDUPE_INFLIGHT: 'false',
    GRAPHQL_RESPONSE_CACHE_MIB: '0',
  });
  expect([
    c.GRAPHQL_MAX_DEPTH,
    c.GRAPHQL_MAX_COST,
    c.REDIS_URL,
    c.GRAPHQL_MAX_ALIASES,
    c.GRAPHQL_DEDUPE_INFLIGHT,
    c.GRAPHQL_RESPONSE_CACHE_MIB,
  ]).toEqual([5, 250, 'rediss://cache:6380', 0, false, 0]);
});

it.each([
  ['GRAPHQL_MAX_DEPTH', '0'],
  ['GRAPHQL_MAX_COST', 'lots'],
  ['GRAPHQL_DEFAULT_LIST_SIZE', '-1'],
  ['GRAPHQL_MAX_TOKENS', '1.5'],
  ['GRAPHQL_MAX_BATCH', '0'],
  ['GRAPHQL_APQ_TTL_S', '0'],
  ['GRAPHQL_QUERY_PLAN_CACHE_MIB', '0'],
  ['REDIS_URL', 'http://cache:6379'],
  ['GRAPHQL_DEDUPE_INFLIGHT', 'yes'],
  ['GRAPHQL_RESPONSE_CACHE_MIB', '-1'],
  ['METRICS_PORT', '65536'],
  ['METRICS_PORT', 'none'],
])('%s=%j is refused with a line naming it', (name, value) => {
  expect(() => loadGatewayConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration: ${name}:`));
});

it('METRICS_PORT: 9464 by default (the topology table), 0 for any free port, off for none', () => {
  expect(loadGatewayConfig({}).METRICS_PORT).toBe(GATEWAY_METRICS_PORT);
  expect(GATEWAY_METRICS_PORT).toBe(9464);
  expect(loadGatewayConfig({ METRICS_PORT: '0' }).METRICS_PORT).toBe(0);
  expect(loadGatewayConfig({ METRICS_PORT: '9100' }).METRICS_PORT).toBe(9100);
  expect(loadGatewayConfig({ METRICS_PORT: 'off' }).METRICS_PORT).toBeNull();
  expect(() => loadGatewayConfig({ METRICS_PORT: 'none' })).toThrow(
    'Invalid configuration: METRICS_PORT: must be a port (0: any free one) or off (got "none")',
  );
});

describe('rate limits', () => {
  const limits = (env: Record<string, string>) => {
    const c = loadGatewayConfig(env);
    return {
      window: c.RATE_LIMIT_WINDOW_S,
      anonymous: c.RATE_LIMIT_ANONYMOUS,
      authenticated: c.RATE_LIMIT_AUTHENTICATED,
      cost: c.RATE_LIMIT_GRAPHQL_COST,
    };
  };

  it('production: 300 requests a minute per address, 1,200 per caller, 100,000 GraphQL cost units per caller', () => {
    expect(limits({})).toEqual({ window: 60, anonymous: 300, authenticated: 1200, cost: 100_000 });
  });

  it('embedded (development, test): high enough that the demo, the e2e suite and the benchmarks never reach them', () => {
    for (const HALO_ENV of ['development', 'test']) {
      expect(limits({ HALO_ENV })).toEqual({ window: 60, anonymous: 10_000_000, authenticated: 10_000_000, cost: 1_000_000_000 });
    }
  });

  it('each is configurable (0: off), and a bad value names its variable', () => {
    expect(
      limits({ RATE_LIMIT_ANONYMOUS: '0', RATE_LIMIT_AUTHENTICATED: '50', RATE_LIMIT_GRAPHQL_COST: '9', RATE_LIMIT_WINDOW_S: '1' }),
    ).toEqual({
      window: 1,
      anonymous: 0,
      authenticated: 50,
      cost: 9,
    });
    expect(() => loadGatewayConfig({ RATE_LIMIT_ANONYMOUS: '-1' })).toThrow(/RATE_LIMIT_ANONYMOUS/);
    expect(() => loadGatewayConfig({ RATE_LIMIT_WINDOW_S: '0' })).toThrow(/RATE_LIMIT_WINDOW_S/);
  });
});

describe('CORS_ORIGINS', () => {
  it('defaults to none in production, loopback on any port in development; a given list wins', () => {
    expect(loadGatewayConfig({}).CORS_ORIGINS.entries).toEqual([]);
    expect(loadGatewayConfig({ HALO_ENV: 'development' }).CORS_ORIGINS.entries).toEqual(['http://localhost:*', 'http://127.0.0.1:*']);
    expect(loadGatewayConfig({ HALO_ENV: 'development', CORS_ORIGINS: 'https://*.Example.com' }).CORS_ORIGINS.entries).toEqual([
      'https://*.example.com',
    ]);
  });

  it.each(['*', 'example.com', 'https://app.example.com/app'])('refuses %s, naming the variable', (value) => {
    expect(() => loadGatewayConfig({ CORS_ORIGINS: value })).toThrow(/^Invalid configuration: CORS_ORIGINS: /);
  });
});
