import { createServer } from 'node:http';
import { serviceIdentityFor, signAccessToken } from '@halo/kit/auth';
import { closeRedis, openRedis, redisReady, type Redis } from '@halo/kit/db';
import { createLogger, runInRequest } from '@halo/kit/logging';
import { listen } from '@halo/kit/process';
import { TEST_JWT_SECRET, testIdentityEnv } from '@halo/kit/testing';
import { createCallerResolver } from '../src/auth';
import { graphqlLimits, loadGatewayConfig } from '../src/config';
import { createGraphQL, type GraphQLHandler } from '../src/graphql/engine';
import { RedisResponseTier, ResponseCacheStore } from '../src/graphql/response-cache';
import { closedPort, closeServer, composeSupergraph, fileSource, startSubgraph, tempSupergraph, type TestSubgraph } from './helpers';

/**
 * The edge response cache (issue 12, S1c): an anonymous caller's query whose answer is public
 * with maxAge > 0 and error-free is served from the gateway for that maxAge, with `Age` and the
 * remaining max-age; nothing else is ever stored or served from it. A real subgraph counts what
 * reaches it. The gateway is createGraphQL behind node:http, as app.ts serves it.
 */

const CACHE_CONTROL_SDL = `
  enum CacheControlScope { PUBLIC PRIVATE }
  directive @cacheControl(maxAge: Int, scope: CacheControlScope, inheritMaxAge: Boolean) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION
`;
const CATALOG = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key"])
  ${CACHE_CONTROL_SDL}
  type Product @key(fields: "id") @cacheControl(maxAge: 60) { id: ID! name: String! version: Int! }
  type Query {
    products(limit: Int): [Product!]! @cacheControl(maxAge: 60)
    brief: Int @cacheControl(maxAge: 1)
    mine: Int @cacheControl(maxAge: 60, scope: PRIVATE)
    live: Int
    broken: Int @cacheControl(maxAge: 60)
  }
  type Mutation { touch: Product @cacheControl(maxAge: 60) }
`;
/** A subgraph that is down in these tests: it answers nothing, so it sets no policy either. */
const CONTENT = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { down: Int }
`;

/** Bumped by every resolver call, so a stale answer is told from a fresh one. */
let version = 0;
const products = (limit = 2) => Array.from({ length: limit }, (_x, i) => ({ id: String(i + 1), name: `product ${i + 1}`, version }));

let catalog: TestSubgraph;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: { graphql: GraphQLHandler; url: string; stop(): Promise<void> };

beforeAll(async () => {
  catalog = await startSubgraph(CATALOG, {
    Query: {
      products: (_: unknown, { limit }: { limit?: number }) => (version++, products(limit)),
      brief: () => ++version,
      mine: () => ++version,
      live: () => ++version,
      broken: () => {
        throw new Error('broken');
      },
    },
    Product: { __resolveReference: (ref: { id: string }) => ({ ...ref, name: `product ${ref.id}`, version }) },
    Mutation: { touch: () => ({ id: '1', name: 'product 1', version: ++version }) },
  });
  supergraph = tempSupergraph(
    composeSupergraph([
      { name: 'catalog', sdl: CATALOG, url: 'http://127.0.0.1:1/graphql' },
      { name: 'content', sdl: CONTENT, url: 'http://127.0.0.1:1/graphql' },
    ]),
  );
  gw = await startGateway();
});

/** Who answered each POST, as the gateway's `halo_graphql_lean_requests_total{by}` counts it (every gateway here). */
const answeredBy: string[] = [];

/** A gateway (createGraphQL behind node:http) in front of the catalog subgraph, with its own LRU. */
async function startGateway(sharedResponseCache?: RedisResponseTier): Promise<typeof gw> {
  const config = loadGatewayConfig({
    ...testIdentityEnv('gateway'),
    CATALOG_URL: catalog.url,
    CONTENT_URL: `http://127.0.0.1:${await closedPort()}`,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
  });
  const callers = createCallerResolver({
    identity: serviceIdentityFor('gateway', config),
    jwtSecret: config.JWT_SECRET,
    authGrpcAddr: config.AUTH_GRPC_ADDR,
    deadlineMs: config.GRPC_DEADLINE_MS,
  });
  const graphql = createGraphQL({
    callers,
    ...fileSource(config, createLogger('gateway', 'silent')),
    bodyLimit: config.BODY_LIMIT,
    logger: createLogger('gateway', 'silent'),
    limits: graphqlLimits(config),
    persistedQueries: { ttlSeconds: config.GRAPHQL_APQ_TTL_S },
    queryPlanCacheMiB: config.GRAPHQL_QUERY_PLAN_CACHE_MIB,
    responseCacheMiB: config.GRAPHQL_RESPONSE_CACHE_MIB,
    ...(sharedResponseCache ? { sharedResponseCache } : {}),
    leanAnswered: (by) => answeredBy.push(by),
  });
  await graphql.start();
  let n = 0;
  const server = createServer((req, res) => runInRequest({ requestId: `req-${++n}` }, graphql.handle, req, res));
  const port = await listen(server, 0, '127.0.0.1');
  return {
    graphql,
    url: `http://127.0.0.1:${port}/graphql`,
    async stop() {
      await closeServer(server);
      await graphql.stop();
      callers.close();
    },
  };
}

afterAll(async () => {
  await gw?.stop();
  await catalog?.stop();
  supergraph?.remove();
});

type Body = any;

async function send(
  query: string,
  opts: { variables?: Record<string, unknown>; headers?: Record<string, string>; get?: boolean; url?: string } = {},
) {
  const before = catalog.calls();
  const url = opts.url ?? gw.url;
  const res = opts.get
    ? await fetch(
        `${url}?${new URLSearchParams({ query, ...(opts.variables ? { variables: JSON.stringify(opts.variables) } : {}) }).toString()}`,
        {
          headers: opts.headers ?? {},
        },
      )
    : await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...opts.headers },
        body: JSON.stringify({ query, variables: opts.variables }),
      });
  const body = (await res.json()) as Body;
  return {
    body,
    age: res.headers.get('age'),
    cacheControl: res.headers.get('cache-control'),
    /** Whether the subgraph was called for this request. */
    reached: catalog.calls() > before,
  };
}

const bearer = (sub: string) => ({ authorization: `Bearer ${signAccessToken({ sub, name: 'u', role: 'user' }, TEST_JWT_SECRET, 60)}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('edge response cache', () => {
  it('a public catalog query is served from the cache the second time: Age, same data, no subgraph call', async () => {
    const q = 'query List($n: Int) { products(limit: $n) { id name version } }';
    const first = await send(q, { variables: { n: 2 } });
    expect([first.reached, first.age, first.cacheControl]).toEqual([true, null, 'max-age=60, public']);
    const second = await send(q, { variables: { n: 2 } });
    expect([second.reached, second.age, second.cacheControl]).toEqual([false, '0', 'max-age=60, public']);
    expect(second.body).toEqual(first.body);
    // The same operation spelled differently, and over GET: the same entry.
    const respelled = await send('query List( $n : Int ) {\n  products(limit: $n) { id, name, version } # comment\n}', {
      variables: { n: 2 },
      get: true,
    });
    expect([respelled.reached, respelled.age]).toEqual([false, '0']);
    expect(respelled.body).toEqual(first.body);
    // Other variables: another entry.
    expect((await send(q, { variables: { n: 3 } })).reached).toBe(true);
    expect(gw.graphql.responseCache!.entries()).toBeGreaterThanOrEqual(2);
  });

  it('both paths share it and send a hit as it was stored: a POST (the lean path) and a GET (Apollo Server) each hit what the other stored', async () => {
    const raw = async (query: string, get: boolean) => {
      const before = catalog.calls();
      const res = get
        ? await fetch(`${gw.url}?${new URLSearchParams({ query }).toString()}`)
        : await fetch(gw.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
      const headers = Object.fromEntries([...res.headers].filter(([name]) => !['date', 'x-request-id'].includes(name)));
      return { status: res.status, headers, text: await res.text(), reached: catalog.calls() > before };
    };
    // Stored by the lean path, served by both.
    const q = '{ products(limit: 4) { id name } }';
    const stored = await raw(q, false);
    expect([stored.reached, answeredBy.at(-1), stored.headers.age]).toEqual([true, 'lean', undefined]); // its first run: the executor
    const viaApollo = await raw(q, true);
    const viaLean = await raw(q, false);
    expect(answeredBy.at(-1)).toBe('cache');
    for (const hit of [viaApollo, viaLean]) {
      expect([hit.status, hit.reached, hit.text]).toEqual([200, false, stored.text]);
      expect(hit.headers).toEqual({ ...stored.headers, age: '0' });
    }
    // Stored by Apollo Server's path, served by the lean path.
    const q2 = '{ products(limit: 5) { id name } }';
    const storedByApollo = await raw(q2, true);
    expect(storedByApollo.reached).toBe(true);
    const hit = await raw(q2, false);
    expect([hit.reached, answeredBy.at(-1), hit.text, hit.headers]).toEqual([
      false,
      'cache',
      storedByApollo.text,
      { ...storedByApollo.headers, age: '0' },
    ]);
    expect(JSON.parse(hit.text).data.products).toHaveLength(5);
  });

  it('an authenticated caller is never served from it, and its answers are never stored', async () => {
    const q = '{ products(limit: 4) { id version } }';
    expect((await send(q)).reached).toBe(true);
    const authenticated = await send(q, { headers: bearer('7') });
    expect([authenticated.reached, authenticated.age, authenticated.cacheControl]).toEqual([true, null, 'max-age=60, private']);
    const q2 = '{ products(limit: 5) { id version } }';
    expect((await send(q2, { headers: bearer('7') })).reached).toBe(true);
    expect((await send(q2, { headers: bearer('7') })).reached).toBe(true);
    expect((await send(q2)).reached).toBe(true);
  });

  it('a private answer, an answer with maxAge 0 and an answer with errors are never stored', async () => {
    for (const q of ['{ mine }', '{ live }', '{ products { id } live }', '{ products { id } broken }']) {
      const first = await send(q);
      const second = await send(q);
      expect([q, first.reached, second.reached, second.age]).toEqual([q, true, true, null]);
    }
    expect((await send('{ products { id } broken }')).body.errors).toHaveLength(1);
  });

  it('partial data while a service is down is never stored, though the parts that answered were public', async () => {
    const q = '{ products(limit: 3) { id } down }';
    const first = await send(q);
    expect(first.body.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }) })]);
    expect(first.cacheControl).toBe('no-store');
    const second = await send(q);
    expect([second.reached, second.age]).toEqual([true, null]);
  });

  it('a mutation is never stored nor served', async () => {
    const first = await send('mutation { touch { id version } }');
    const second = await send('mutation { touch { id version } }');
    expect([first.reached, second.reached, second.age]).toEqual([true, true, null]);
    expect(second.body.data.touch.version).toBeGreaterThan(first.body.data.touch.version);
  });

  it('entries expire after maxAge; a hit’s max-age is what remains of it', async () => {
    const short = '{ brief }';
    const long = '{ products(limit: 1) { id } }';
    const stored = await send(short);
    await send(long);
    expect([stored.reached, stored.cacheControl]).toEqual([true, 'max-age=1, public']);
    const hit = await send(short);
    expect([hit.reached, hit.age, hit.body]).toEqual([false, '0', stored.body]);
    await sleep(1_100);
    const expired = await send(short);
    expect([expired.reached, expired.age]).toEqual([true, null]);
    expect(expired.body.data.brief).toBeGreaterThan(stored.body.data.brief);
    const older = await send(long);
    const age = Number(older.age);
    expect(age).toBeGreaterThanOrEqual(1);
    expect([older.reached, older.cacheControl]).toEqual([false, `max-age=${60 - age}, public`]);
  });
});

describe('shared by every replica through Redis (REDIS_URL)', () => {
  const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `halo:test:${process.pid}:rc:`;
  const logger = createLogger('test', 'silent');
  let redis: Redis;
  let a: typeof gw;
  let b: typeof gw;

  beforeAll(async () => {
    redis = openRedis(REDIS_URL, logger);
    expect(await redisReady(redis)).toBe(true);
    a = await startGateway(new RedisResponseTier(redis, prefix, logger));
    b = await startGateway(new RedisResponseTier(redis, prefix, logger));
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('an answer one replica stored is served by another, with its age, max-age and no subgraph call', async () => {
    const q = '{ products(limit: 6) { id name version } }';
    const first = await send(q, { url: a.url });
    expect([first.reached, first.age]).toEqual([true, null]);
    // The write to Redis is not awaited by the answer: wait until it is there.
    for (let i = 0; i < 50 && (await redis.keys(`${prefix}*`)).length === 0; i++) await sleep(20);
    const [key] = await redis.keys(`${prefix}response:*`);
    expect(await redis.pttl(key!)).toBeGreaterThan(58_000);
    const other = await send(q, { url: b.url });
    expect([other.reached, other.age, other.cacheControl]).toEqual([false, '0', 'max-age=60, public']);
    expect(other.body).toEqual(first.body);
    // b now holds its own copy: served with Redis emptied.
    await redis.del(key!);
    expect((await send(q, { url: b.url })).reached).toBe(false);
  });

  it('what is never stored locally is never shared either: authenticated callers, private answers, errors', async () => {
    const before = (await redis.keys(`${prefix}*`)).length;
    await send('{ products(limit: 7) { id } }', { url: a.url, headers: bearer('7') });
    await send('{ mine }', { url: a.url });
    await send('{ products(limit: 7) { id } broken }', { url: a.url });
    await sleep(100);
    expect((await redis.keys(`${prefix}*`)).length).toBe(before);
    expect((await send('{ products(limit: 7) { id } }', { url: b.url })).reached).toBe(true);
  });

  it('a replica whose Redis is away still answers, from the subgraph', async () => {
    const away = openRedis(`redis://127.0.0.1:${await closedPort()}`, logger);
    const c = await startGateway(new RedisResponseTier(away, prefix, logger));
    try {
      const q = '{ products(limit: 8) { id } }';
      const first = await send(q, { url: c.url });
      expect([first.reached, first.body.errors]).toEqual([true, undefined]);
      // Its own LRU still works.
      expect((await send(q, { url: c.url })).reached).toBe(false);
    } finally {
      await c.stop();
      closeRedis(away);
    }
  });
});

describe('ResponseCacheStore', () => {
  it('evicts the least recently used entries past its size, and refuses what cannot fit', () => {
    const store = new ResponseCacheStore(30);
    store.set('a', '123456789', 60); // 10
    store.set('b', '123456789', 60); // 20
    expect(store.get('a')?.body).toBe('123456789'); // a is now the most recent
    store.set('c', '123456789', 60); // 30
    store.set('d', '123456789', 60); // 40 → b goes
    expect([store.get('a'), store.get('b'), store.get('c'), store.get('d')].map((e) => e?.body ?? null)).toEqual([
      '123456789',
      null,
      '123456789',
      '123456789',
    ]);
    expect(store.usedBytes).toBe(30);
    store.set('e', 'x'.repeat(40), 60);
    expect(store.get('e')).toBeUndefined();
    expect(store.size).toBe(3);
  });

  it('ages entries in whole seconds and drops them at maxAge', () => {
    let now = 1_000_000;
    const store = new ResponseCacheStore(1024, () => now);
    store.set('k', '{}', 10);
    now += 9_999;
    expect(store.get('k')).toEqual({ body: '{}', ageS: 9, maxAgeS: 10 });
    now += 1;
    expect(store.get('k')).toBeUndefined();
    expect([store.size, store.usedBytes]).toEqual([0, 0]);
    store.set('z', '{}', 0);
    expect(store.size).toBe(0);
  });
});
