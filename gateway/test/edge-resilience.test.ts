import { randomBytes } from 'node:crypto';
import { openRedis, redisReady, type Redis } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { sha256 } from '../src/graphql/persisted';
import { closedPort, composeSupergraph, startGateway, startSubgraph, tempSupergraph, until, type TestSubgraph } from './helpers';

/**
 * The edge when things move: a subgraph that stops (partial data), a supergraph replaced under
 * load (hot reload, new limits included), persisted queries shared by replicas through the real
 * Redis, and that Redis going away.
 */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const CONTENT = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@cost", "@listSize"])
  type Item @key(fields: "id") { id: ID! name: String! }
  type Query {
    item(id: ID!): Item
    items(first: Int): [Item!]! @listSize(slicingArguments: ["first"], requireOneSlicingArgument: false)
    slow(ms: Int!): String
  }
`;
/** What a release of content adds: a field, and a price on `items`. */
const CONTENT_V2 = CONTENT.replace('slow(ms: Int!): String', 'slow(ms: Int!): String\n    version: String').replace(
  '@listSize(slicingArguments',
  '@cost(weight: 5) @listSize(slicingArguments',
);
const CATALOG = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key"])
  type Item @key(fields: "id") { id: ID! price: Float! }
  type Query { featured: Item }
`;

const item = (id: string) => ({ id, name: `item ${id}` });
const contentResolvers = {
  Query: {
    item: (_: unknown, { id }: { id: string }) => item(id),
    items: (_: unknown, { first }: { first?: number }) => Array.from({ length: Math.min(first ?? 3, 3) }, (_x, i) => item(String(i))),
    slow: (_: unknown, { ms }: { ms: number }) => new Promise((r) => setTimeout(() => r(`slept ${ms}`), ms)),
    version: () => 'v2',
  },
  Item: { __resolveReference: (ref: { id: string }) => item(ref.id) },
};
const catalogResolvers = {
  Query: { featured: () => ({ id: 'f', price: 9.5 }) },
  Item: { __resolveReference: (ref: { id: string }) => ({ id: ref.id, price: 1 }) },
};

let content: TestSubgraph;
let catalog: TestSubgraph;

beforeAll(async () => {
  content = await startSubgraph(CONTENT_V2, contentResolvers);
  catalog = await startSubgraph(CATALOG, catalogResolvers);
});

afterAll(async () => {
  await content?.stop();
  await catalog?.stop();
});

const compose = (contentSdl: string) =>
  composeSupergraph([
    { name: 'content', sdl: contentSdl, url: 'http://127.0.0.1:1/graphql' },
    { name: 'catalog', sdl: CATALOG, url: 'http://127.0.0.1:1/graphql' },
  ]);

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

it('a subgraph that is down yields partial data and an error for its fields only', async () => {
  const supergraph = tempSupergraph(compose(CONTENT));
  const gw = await startGateway({
    CONTENT_URL: content.url,
    CATALOG_URL: `http://127.0.0.1:${await closedPort()}`,
    SUPERGRAPH_PATH: supergraph.path,
  });
  try {
    const { status, body } = await post(gw.url, { query: '{ item(id: "1") { name } featured { price } }' });
    expect(status).toBe(200);
    expect(body.data).toEqual({ item: { name: 'item 1' }, featured: null });
    expect(body.errors).toHaveLength(1);
    // @apollo/gateway reports a failed fetch without a path; the message hides the address.
    expect(body.errors[0]).toMatchObject({ message: 'Service unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } });
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
    // A field the missing subgraph adds to an entity: null, and being non-null (Float!), so is
    // its object; still HTTP 200 with the error, not a failed request.
    const entity = await post(gw.url, { query: '{ item(id: "2") { name price } }' });
    expect(entity.status).toBe(200);
    expect(entity.body.data).toEqual({ item: null });
    expect(entity.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    const other = await post(gw.url, { query: '{ item(id: "3") { name } }' });
    expect(other.body).toEqual({ data: { item: { name: 'item 3' } } });
  } finally {
    await gw.stop();
    supergraph.remove();
  }
});

it('a new supergraph is served without a restart, no request in flight is dropped, and its limits apply', async () => {
  const supergraph = tempSupergraph(compose(CONTENT));
  const gw = await startGateway({
    CONTENT_URL: content.url,
    CATALOG_URL: catalog.url,
    SUPERGRAPH_PATH: supergraph.path,
    GRAPHQL_MAX_COST: '50',
  });
  try {
    // Before: `items` costs 1 per item.
    expect((await post(gw.url, { query: '{ items(first: 20) { id } }' })).status).toBe(200);
    expect((await post(gw.url, { query: '{ version }' })).status).toBe(400);

    // Requests keep coming (each in flight ~150 ms) while the file is replaced.
    const answers: Promise<{ status: number; body: unknown }>[] = [];
    let reloaded = false;
    const load = (async () => {
      while (!reloaded) {
        answers.push(post(gw.url, { query: '{ slow(ms: 150) item(id: "x") { name } }' }));
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    supergraph.write(compose(CONTENT_V2));
    await until(async () => (await post(gw.url, { query: '{ version }' })).status === 200);
    await new Promise((r) => setTimeout(r, 200));
    reloaded = true;
    await load;
    const settled = await Promise.all(answers);
    expect(settled.length).toBeGreaterThan(10);
    for (const a of settled) expect(a).toEqual({ status: 200, body: { data: { slow: 'slept 150', item: { name: 'item x' } } } });

    // After: the new field, and the new price: 5 per item.
    expect((await post(gw.url, { query: '{ version }' })).body).toEqual({ data: { version: 'v2' } });
    expect((await post(gw.url, { query: '{ items(first: 10) { id } }' })).status).toBe(200);
    const refused = await post(gw.url, { query: '{ items(first: 20) { id } }' });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions).toEqual({ code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost: 100, maxCost: 50 });
  } finally {
    await gw.stop();
    supergraph.remove();
  }
});

describe('persisted queries in Redis (REDIS_URL)', () => {
  const prefix = `halo:test-gateway-${randomBytes(4).toString('hex')}:`;
  let redis: Redis;
  let supergraph: ReturnType<typeof tempSupergraph>;

  beforeAll(async () => {
    redis = openRedis(REDIS_URL, createLogger('test', 'silent'));
    expect(await redisReady(redis)).toBe(true);
    supergraph = tempSupergraph(compose(CONTENT));
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    supergraph?.remove();
  });

  it('a query registered through one replica is known to every other', async () => {
    const env = {
      CONTENT_URL: content.url,
      CATALOG_URL: catalog.url,
      SUPERGRAPH_PATH: supergraph.path,
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      GRAPHQL_APQ_TTL_S: '600',
    };
    const [a, b] = await Promise.all([startGateway(env), startGateway(env)]);
    try {
      const query = `{ item(id: "${randomBytes(4).toString('hex')}") { name } }`;
      const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
      await until(async () => (await post(b.url, { extensions })).body.errors?.[0]?.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND');
      expect((await post(a.url, { query, extensions })).status).toBe(200);
      const key = `${prefix}apq:${sha256(query)}`;
      await until(async () => (await redis.get(key)) === query);
      const ttl = await redis.ttl(key);
      expect(ttl).toBeGreaterThan(590);
      expect(ttl).toBeLessThanOrEqual(600);
      const fromB = await post(b.url, { extensions });
      expect(fromB.body.data.item.name).toMatch(/^item /);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('without Redis, persisted queries miss (clients resend the query) and everything else works', async () => {
    const gw = await startGateway({
      CONTENT_URL: content.url,
      CATALOG_URL: catalog.url,
      SUPERGRAPH_PATH: supergraph.path,
      REDIS_URL: `redis://127.0.0.1:${await closedPort()}`,
    });
    try {
      const query = '{ item(id: "nr") { name } }';
      const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
      expect((await post(gw.url, { query, extensions })).body).toEqual({ data: { item: { name: 'item nr' } } });
      const again = await post(gw.url, { extensions });
      expect(again.status).toBe(200);
      expect(again.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      // A hash that is not a SHA-256 is never looked up at all.
      const odd = await post(gw.url, { extensions: { persistedQuery: { version: 1, sha256Hash: 'x'.repeat(5000) } } });
      expect(odd.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    } finally {
      await gw.stop();
    }
  });
});
