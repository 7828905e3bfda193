import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { composeSupergraph, startGateway, tempSupergraph, type RunningGateway } from './helpers';

/**
 * `Cache-Control` through the gateway (docs/api/graphql.md, docs/api/conventions.md): each subgraph computes the policy of
 * its own response from `@cacheControl` hints and sends it as a header; the gateway keeps the most
 * restrictive one across every subgraph it called (min maxAge; private if any part is private or
 * the caller is authenticated; no-store when nothing may be cached).
 */

const CACHE_CONTROL_SDL = `
  enum CacheControlScope { PUBLIC PRIVATE }
  directive @cacheControl(maxAge: Int, scope: CacheControlScope, inheritMaxAge: Boolean) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION
`;
const SHOP = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@shareable"])
  ${CACHE_CONTROL_SDL}
  type Item @key(fields: "id") @cacheControl(maxAge: 60) { id: ID! name: String! }
  type Query {
    items: [Item!]! @cacheControl(maxAge: 60)
    brief: String @cacheControl(maxAge: 30)
    mine: String @cacheControl(maxAge: 60, scope: PRIVATE)
    live: String
  }
`;
const OTHER = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { uncached: String }
`;

let servers: ApolloServer[] = [];
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

async function subgraph(sdl: string, resolvers: Record<string, Record<string, unknown>>): Promise<string> {
  const server = new ApolloServer({
    plugins: [ApolloServerPluginInlineTraceDisabled()],
    schema: buildSubgraphSchema({ typeDefs: parse(sdl), resolvers: resolvers as never }),
  });
  servers.push(server);
  const { url } = await startStandaloneServer(server, { listen: { port: 0, host: '127.0.0.1' } });
  return url.replace(/\/$/, '');
}

beforeAll(async () => {
  const shop = await subgraph(SHOP, {
    Query: { items: () => [{ id: '1', name: 'one' }], brief: () => 'b', mine: () => 'm', live: () => 'l' },
  });
  const other = await subgraph(OTHER, { Query: { uncached: () => 'u' } });
  supergraph = tempSupergraph(
    composeSupergraph([
      { name: 'catalog', sdl: SHOP, url: 'http://127.0.0.1:1/graphql' },
      { name: 'content', sdl: OTHER, url: 'http://127.0.0.1:1/graphql' },
    ]),
  );
  gw = await startGateway({ CATALOG_URL: shop, CONTENT_URL: other, SUPERGRAPH_PATH: supergraph.path, JWT_SECRET: TEST_JWT_SECRET });
});

afterAll(async () => {
  await gw?.stop();
  for (const s of servers) await s.stop();
  servers = [];
  supergraph?.remove();
});

async function cacheControl(query: string, headers: Record<string, string> = {}, method: 'POST' | 'GET' = 'POST') {
  const res =
    method === 'GET'
      ? await fetch(`${gw.url}/graphql?query=${encodeURIComponent(query)}`, { headers })
      : await fetch(`${gw.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ query }),
        });
  const body = (await res.json()) as { errors?: unknown[] };
  expect(body.errors).toBeUndefined();
  return res.headers.get('cache-control');
}

const bearer = () => ({ authorization: `Bearer ${signAccessToken({ sub: '2', name: 'u', role: 'user' }, TEST_JWT_SECRET, 60)}` });

describe('Cache-Control computed from the subgraphs’ hints', () => {
  it('public data hinted 60 s → max-age=60, public (POST and GET)', async () => {
    expect(await cacheControl('{ items { id name } }')).toBe('max-age=60, public');
    expect(await cacheControl('{ items { id name } }', {}, 'GET')).toBe('max-age=60, public');
  });

  it('the smallest maxAge wins', async () => {
    expect(await cacheControl('{ items { id } brief }')).toBe('max-age=30, public');
  });

  it('a private part makes the whole answer private', async () => {
    expect(await cacheControl('{ items { id } mine }')).toBe('max-age=60, private');
  });

  it('an unhinted field, or another subgraph without hints, → no-store', async () => {
    expect(await cacheControl('{ items { id } live }')).toBe('no-store');
    expect(await cacheControl('{ items { id } uncached }')).toBe('no-store');
  });

  it('an authenticated request is never shared-cacheable: private', async () => {
    expect(await cacheControl('{ items { id name } }', bearer())).toBe('max-age=60, private');
    expect(await cacheControl('{ items { id } live }', bearer())).toBe('no-store');
  });

  it('a batch gets the most restrictive policy of its operations', async () => {
    const batch = async (queries: string[], headers: Record<string, string> = {}) => {
      const res = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(queries.map((query) => ({ query }))),
      });
      expect(res.status).toBe(200);
      return res.headers.get('cache-control');
    };
    expect(await batch(['{ items { id } }', '{ brief }'])).toBe('max-age=30, public');
    expect(await batch(['{ brief }', '{ items { id } }'])).toBe('max-age=30, public');
    expect(await batch(['{ items { id } }', '{ mine }'])).toBe('max-age=60, private');
    expect(await batch(['{ live }', '{ items { id } }'])).toBe('no-store');
    expect(await batch(['{ items { id } }', '{ live }'])).toBe('no-store');
    expect(await batch(['{ items { id } }'], bearer())).toBe('max-age=60, private');
  });

  it('errors are never stored: a business error, a refused operation, a bad token', async () => {
    const post = (query: string, headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query }),
      });
    expect((await post('{ items { id } nope }')).headers.get('cache-control')).toBe('no-store');
    const badToken = await post('{ items { id } }', { authorization: 'Bearer nope' });
    expect([badToken.status, badToken.headers.get('cache-control')]).toEqual([401, 'no-store']);
  });
});
