import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { signAccessToken } from '@halo/kit/auth';
import { openRedis, redisReady, type Redis } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { closedPort, composeSupergraph, startEcho, startGateway, tempSupergraph, type RunningGateway } from './helpers';

/**
 * Rate limits at the edge (README "Limits"), against running gateways, a real upstream and a real
 * Redis: requests per caller (API key, user, else the client address the gateway judged), GraphQL
 * cost spent from a budget, 429 with Retry-After and the draft's RateLimit fields, shared by
 * replicas through Redis, failing open when Redis is down.
 */

const SHOP = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@cost"])
  type Item @key(fields: "id") { id: ID! }
  type Query { item: Item  weighted: Item @cost(weight: 40) }
`;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let echo: Awaited<ReturnType<typeof startEcho>>;
let subgraph: ApolloServer;
let supergraph: ReturnType<typeof tempSupergraph>;
let shopUrl: string;
/** How often the subgraph resolved `weighted`. */
let weightedCalls = 0;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  echo = await startEcho();
  subgraph = new ApolloServer({
    plugins: [ApolloServerPluginInlineTraceDisabled()],
    schema: buildSubgraphSchema({
      typeDefs: parse(SHOP),
      resolvers: { Query: { item: () => ({ id: '1' }), weighted: () => (weightedCalls++, { id: '2' }) } },
    }),
  });
  shopUrl = (await startStandaloneServer(subgraph, { listen: { port: 0, host: '127.0.0.1' } })).url.replace(/\/$/, '');
  supergraph = tempSupergraph(composeSupergraph([{ name: 'catalog', sdl: SHOP, url: 'http://127.0.0.1:1/graphql' }]));
});

afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  await subgraph?.stop();
  await echo?.close();
  supergraph?.remove();
});

async function gateway(env: Record<string, string>, logger?: Parameters<typeof startGateway>[1]) {
  const gw = await startGateway(
    {
      CONTENT_URL: echo.url,
      AUTH_URL: echo.url,
      CATALOG_URL: shopUrl,
      SUPERGRAPH_PATH: supergraph.path,
      JWT_SECRET: TEST_JWT_SECRET,
      RATE_LIMIT_ANONYMOUS: '1000',
      RATE_LIMIT_AUTHENTICATED: '1000',
      RATE_LIMIT_GRAPHQL_COST: '100000',
      ...env,
    },
    logger,
  );
  gateways.push(gw);
  return gw;
}

const bearer = (sub: string) => `Bearer ${signAccessToken({ sub, name: `u${sub}`, role: 'user' }, TEST_JWT_SECRET, 60)}`;

async function get(gw: RunningGateway, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(gw.url + path, { headers });
  return { res, body: await res.json() };
}

async function graphql(gw: RunningGateway, query: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return { res, body: (await res.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] } };
}

/** The `r` of one policy in a RateLimit field value. */
const remaining = (field: string | null, policy: string) => Number(new RegExp(`"${policy}";r=(\\d+);t=\\d+`).exec(field ?? '')?.[1]);

describe('REST: requests per caller', () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await gateway({ RATE_LIMIT_ANONYMOUS: '3', RATE_LIMIT_AUTHENTICATED: '5' });
  });

  it('the N+1th anonymous request from one address → 429 with Retry-After and the RateLimit fields, never proxied', async () => {
    for (let i = 1; i <= 3; i++) {
      const { res } = await get(gw, '/hello');
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=3;w=60');
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"anonymous";r=${3 - i};t=([1-9]|[1-5]\\d|60)$`));
    }
    const proxied = echo.count();
    const { res, body } = await get(gw, '/hello');
    expect(res.status).toBe(429);
    expect(body).toEqual({ error: 'Too many requests' });
    expect(res.headers.get('cache-control')).toBe('no-store');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=3;w=60');
    // The reset is the same instant as Retry-After.
    expect(res.headers.get('ratelimit')).toBe(`"anonymous";r=0;t=${retryAfter}`);
    expect(echo.count()).toBe(proxied);
  });

  it('a client-sent X-Forwarded-For does not buy a new budget (no trusted proxy)', async () => {
    for (let i = 0; i < 4; i++) await get(gw, '/hello');
    const { res } = await get(gw, '/hello', { 'x-forwarded-for': '198.51.100.9' });
    expect(res.status).toBe(429);
  });

  it('each user has a budget of their own, apart from their address', async () => {
    const alice = bearer('101');
    for (let i = 1; i <= 5; i++) {
      const { res } = await get(gw, '/hello', { authorization: alice });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"authenticated";q=5;w=60');
      expect(remaining(res.headers.get('ratelimit'), 'authenticated')).toBe(5 - i);
    }
    const refused = await get(gw, '/profile', { authorization: alice });
    expect(refused.res.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Too many requests' });
    // Bob, from the same address, is untouched.
    const bob = await get(gw, '/profile', { authorization: bearer('102') });
    expect(bob.res.status).toBe(200);
    expect(remaining(bob.res.headers.get('ratelimit'), 'authenticated')).toBe(4);
  });

  it('a bad token counts by address, and is still answered 401 on a protected route', async () => {
    const other = await gateway({ RATE_LIMIT_ANONYMOUS: '1' });
    const first = await get(other, '/profile', { authorization: 'Bearer garbage' });
    expect(first.res.status).toBe(401);
    expect(first.body).toEqual({ error: 'Invalid token' });
    expect(first.res.headers.get('ratelimit')).toMatch(/^"anonymous";r=0;t=\d+$/);
    expect((await get(other, '/hello', { authorization: 'Bearer garbage' })).res.status).toBe(429);
  });

  it('health, readiness, metrics, the documents and unknown paths are not limited', async () => {
    // This address's budget spent (whatever ran before): the paths below still answer.
    for (let i = 0; i < 4; i++) await get(gw, '/hello');
    expect((await get(gw, '/hello')).res.status).toBe(429);
    for (const path of ['/healthz', '/readyz', '/openapi.json', '/nope']) {
      const res = await fetch(gw.url + path);
      expect([path, res.status]).not.toEqual([path, 429]);
      expect(res.headers.get('ratelimit')).toBeNull();
      expect(res.headers.get('ratelimit-policy')).toBeNull();
    }
    const metrics = await fetch(`${gw.metricsUrl!}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/halo_gateway_rate_limited_total\{[^}]*policy="anonymous"[^}]*\} [1-9]/);
  });
});

describe('anonymous callers behind a trusted proxy', () => {
  it('are counted by the client address the proxy forwarded: each address its own budget', async () => {
    const gw = await gateway({ RATE_LIMIT_ANONYMOUS: '2', GATEWAY_TRUSTED_PROXIES: 'loopback' });
    const from = (address: string) => get(gw, '/hello', { 'x-forwarded-for': address });
    expect((await from('203.0.113.7')).res.status).toBe(200);
    expect((await from('203.0.113.7')).res.status).toBe(200);
    expect((await from('203.0.113.7')).res.status).toBe(429);
    expect((await from('203.0.113.8')).res.status).toBe(200);
    // IPv6 counts per /64: another address of the same subscriber shares the budget.
    expect((await from('2001:db8:1:2::1')).res.status).toBe(200);
    expect((await from('2001:db8:1:2::ffff')).res.status).toBe(200);
    expect((await from('2001:db8:1:2:abcd::9')).res.status).toBe(429);
  });
});

describe('GraphQL: requests and estimated cost', () => {
  let gw: RunningGateway;
  beforeAll(async () => {
    gw = await gateway({ RATE_LIMIT_ANONYMOUS: '2', RATE_LIMIT_AUTHENTICATED: '50', RATE_LIMIT_GRAPHQL_COST: '100' });
  });

  it('every response names both policies and what is left of each', async () => {
    const { res, body } = await graphql(gw, '{ item { id } }', { authorization: bearer('201') });
    expect(body).toEqual({ data: { item: { id: '1' } } });
    expect(res.headers.get('ratelimit-policy')).toBe('"authenticated";q=50;w=60, "graphql-cost";q=100;w=60');
    expect(remaining(res.headers.get('ratelimit'), 'authenticated')).toBe(49);
    expect(remaining(res.headers.get('ratelimit'), 'graphql-cost')).toBe(99);
  });

  it('an expensive query exhausts the cost budget sooner: 429 RATE_LIMITED before the subgraph is asked', async () => {
    const carol = { authorization: bearer('202') };
    // `weighted` costs its weight, 40: 40, 80, then 120 > 100.
    for (const left of [60, 20]) {
      const { res, body } = await graphql(gw, '{ weighted { id } }', carol);
      expect(body.errors).toBeUndefined();
      expect(remaining(res.headers.get('ratelimit'), 'graphql-cost')).toBe(left);
    }
    const resolved = weightedCalls;
    const { res, body } = await graphql(gw, '{ weighted { id } }', carol);
    expect(res.status).toBe(429);
    expect(weightedCalls).toBe(resolved);
    expect(body.data).toBeUndefined();
    expect(body.errors).toEqual([{ message: 'Too many requests', extensions: { code: 'RATE_LIMITED' } }]);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(remaining(res.headers.get('ratelimit'), 'graphql-cost')).toBe(0);
    expect(res.headers.get('ratelimit')).toContain(`"graphql-cost";r=0;t=${retryAfter}`);
    // Cheap queries from another caller cost 1 each: the same budget lasts a hundred of them.
    const { res: cheap } = await graphql(gw, '{ item { id } }', { authorization: bearer('203') });
    expect(cheap.status).toBe(200);
    expect(remaining(cheap.headers.get('ratelimit'), 'graphql-cost')).toBe(99);
  });

  it('anonymous requests are counted per address: the N+1th → 429 in the GraphQL error shape', async () => {
    expect((await graphql(gw, '{ item { id } }')).res.status).toBe(200);
    expect((await graphql(gw, '{ item { id } }')).res.status).toBe(200);
    const { res, body } = await graphql(gw, '{ item { id } }');
    expect(res.status).toBe(429);
    expect(body).toEqual({ errors: [{ message: 'Too many requests', extensions: { code: 'RATE_LIMITED' } }] });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get('ratelimit')).toMatch(/^"anonymous";r=0;t=\d+$/);
  });
});

describe('GraphQL over WebSocket', () => {
  /** The answer to one operation sent over the socket: its result's errors, or the error it ended with. */
  function over(client: ReturnType<typeof createClient>, query: string): Promise<unknown> {
    return new Promise((resolve) => {
      client.subscribe({ query }, { next: (v) => resolve(v.errors ?? v.data), error: (e) => resolve(e), complete: () => undefined });
    });
  }

  it('each subscribe message counts as a request and spends its cost; beyond, RATE_LIMITED with retryAfter', async () => {
    const gw = await gateway({ RATE_LIMIT_ANONYMOUS: '2', RATE_LIMIT_AUTHENTICATED: '50', RATE_LIMIT_GRAPHQL_COST: '100' });
    const ws = gw.url.replace('http', 'ws') + '/graphql';
    const anonymous = createClient({ url: ws, webSocketImpl: WebSocket, retryAttempts: 0 });
    const signedIn = createClient({
      url: ws,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { authorization: bearer('301') },
    });
    try {
      const limited = [
        expect.objectContaining({ message: 'Too many requests', extensions: { code: 'RATE_LIMITED', retryAfter: expect.any(Number) } }),
      ];
      expect(await over(anonymous, '{ item { id } }')).toEqual({ item: { id: '1' } });
      expect(await over(anonymous, '{ item { id } }')).toEqual({ item: { id: '1' } });
      expect(await over(anonymous, '{ item { id } }')).toEqual(limited);
      // 40 + 40, then 120 > 100.
      expect(await over(signedIn, '{ weighted { id } }')).toEqual({ weighted: { id: '2' } });
      expect(await over(signedIn, '{ weighted { id } }')).toEqual({ weighted: { id: '2' } });
      expect(await over(signedIn, '{ weighted { id } }')).toEqual(limited);
    } finally {
      await anonymous.dispose();
      await signedIn.dispose();
    }
  });
});

describe('GraphQL over SSE (/graphql/stream)', () => {
  /** One operation over the distinct-connections protocol: its HTTP status, headers and body. */
  async function stream(gw: RunningGateway, query: string, headers: Record<string, string> = {}) {
    const res = await fetch(`${gw.url}/graphql/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify({ query }),
    });
    return { res, body: await res.text() };
  }

  it('each operation counts as a request and spends its cost; beyond, 429 RATE_LIMITED with Retry-After before any stream opens', async () => {
    const gw = await gateway({ RATE_LIMIT_ANONYMOUS: '2', RATE_LIMIT_AUTHENTICATED: '50', RATE_LIMIT_GRAPHQL_COST: '100' });
    for (let i = 0; i < 2; i++) {
      const { res, body } = await stream(gw, '{ item { id } }');
      expect(res.status).toBe(200);
      expect(body).toContain('{"data":{"item":{"id":"1"}}}');
    }
    const refused = await stream(gw, '{ item { id } }');
    expect(refused.res.status).toBe(429);
    expect(refused.res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Number(refused.res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(refused.body)).toEqual({ errors: [{ message: 'Too many requests', extensions: { code: 'RATE_LIMITED' } }] });
    // A signed-in caller has a budget of its own: 40 + 40, then 120 > 100 cost units.
    const dave = { authorization: bearer('302') };
    expect((await stream(gw, '{ weighted { id } }', dave)).res.status).toBe(200);
    expect((await stream(gw, '{ weighted { id } }', dave)).res.status).toBe(200);
    expect((await stream(gw, '{ weighted { id } }', dave)).res.status).toBe(429);
  });
});

describe('shared through Redis', () => {
  const prefix = `halo:test:ratelimit:${randomBytes(6).toString('hex')}:`;
  let redis: Redis;
  beforeAll(() => {
    redis = openRedis(REDIS_URL, createLogger('test', 'silent'));
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('two replicas count one budget: requests spread over both are refused at the limit', async () => {
    expect(await redisReady(redis)).toBe(true);
    const env = { REDIS_URL, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_ANONYMOUS: '4' };
    const a = await gateway(env);
    const b = await gateway(env);
    const statuses: number[] = [];
    for (const gw of [a, b, a, b, a, b]) statuses.push((await get(gw, '/hello')).res.status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    expect((await redis.keys(`${prefix}ratelimit:anonymous*`)).length).toBe(1);
  });
});

describe('Redis unreachable', () => {
  it('fails open: requests still succeed, uncounted; the metric counts each, the log says it once', async () => {
    const lines: string[] = [];
    const logger = createLogger('gateway', 'warn', { write: (line: string) => void lines.push(line) });
    const gw = await gateway({ REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, RATE_LIMIT_ANONYMOUS: '1' }, logger);
    for (let i = 0; i < 3; i++) {
      const { res } = await get(gw, '/hello');
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"anonymous";q=1;w=60');
      expect(res.headers.get('ratelimit')).toBeNull();
    }
    expect((await graphql(gw, '{ item { id } }')).res.status).toBe(200);
    const metrics = await (await fetch(`${gw.metricsUrl!}/metrics`)).text();
    expect(Number(/halo_gateway_rate_limit_store_errors_total\{[^}]*\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(4);
    expect(lines.filter((l) => l.includes('rate-limit store unavailable'))).toHaveLength(1);
  });
});
