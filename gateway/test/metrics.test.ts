import { signAccessToken } from '@halo/kit/auth';
import { metricValue, parseMetrics, TEST_JWT_SECRET, type MetricSample } from '@halo/kit/testing';
import { MAX_OPERATION_NAMES } from '../src/observability/metrics';
import {
  closedPort,
  composeSupergraph,
  startEcho,
  startGateway,
  startSubgraph,
  tempSupergraph,
  type RunningGateway,
  type TestSubgraph,
} from './helpers';

/**
 * The gateway's Prometheus metrics, read the way Prometheus reads them: `GET /metrics` on the
 * metrics port (METRICS_PORT), after real requests through the public port — REST proxied to a
 * real upstream, GraphQL planned against a real subgraph. The public port never serves them.
 */

const CACHE_CONTROL_SDL = `
  enum CacheControlScope { PUBLIC PRIVATE }
  directive @cacheControl(maxAge: Int, scope: CacheControlScope, inheritMaxAge: Boolean) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION
`;
const SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@authenticated"])
  ${CACHE_CONTROL_SDL}
  type Item @key(fields: "id") { id: ID! name: String! next: Item }
  type Query {
    item(id: ID!): Item
    cached: Int @cacheControl(maxAge: 60)
    broken: Int
    secret: String @authenticated
  }
  type Mutation { touch(id: ID!): Item }
`;
const item = (id: string) => ({ id, name: `item ${id}`, next: null });

let subgraph: TestSubgraph;
let echo: Awaited<ReturnType<typeof startEcho>>;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  subgraph = await startSubgraph(SDL, {
    Query: {
      item: (_: unknown, { id }: { id: string }) => item(id),
      cached: () => 1,
      broken: () => {
        throw new Error('broken');
      },
      secret: () => 's3cret',
    },
    Item: { next: (i: { id: string }) => item(`${i.id}.next`) },
    Mutation: { touch: (_: unknown, { id }: { id: string }) => item(id) },
  });
  echo = await startEcho();
  supergraph = tempSupergraph(composeSupergraph([{ name: 'catalog', sdl: SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({
    CATALOG_URL: subgraph.url,
    // REST: content's routes reach the echo upstream, auth's reach nobody.
    CONTENT_URL: echo.url,
    AUTH_URL: `http://127.0.0.1:${await closedPort()}`,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
    GRAPHQL_MAX_DEPTH: '3',
    GRAPHQL_MAX_BATCH: '50',
  });
});

afterAll(async () => {
  await gw?.stop();
  await subgraph?.stop();
  await echo?.close();
  supergraph?.remove();
});

async function scrape(): Promise<{ text: string; samples: MetricSample[] }> {
  const res = await fetch(`${gw.metricsUrl}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parseMetrics(text) };
}

const gql = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  }).then(async (res) => ({
    status: res.status,
    body: (await res.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] },
  }));

/** Requests the gateway answered, by labels, in a scrape. */
const requests = (samples: MetricSample[], labels: Record<string, string>) =>
  metricValue(samples, 'halo_http_request_duration_seconds_count', labels);
const operations = (samples: MetricSample[], labels: Record<string, string>) =>
  metricValue(samples, 'halo_graphql_operation_duration_seconds_count', labels);

describe('the metrics port', () => {
  it('serves Prometheus text at GET /metrics, no-store, every series labelled service=gateway', async () => {
    const res = await fetch(`${gw.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const samples = parseMetrics(await res.text());
    expect(samples.length).toBeGreaterThan(20);
    expect(samples.every((s) => s.labels.service === 'gateway')).toBe(true);
    // The Node runtime's, as every process has them.
    expect(samples.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('answers nothing else: another path 404, another method 405', async () => {
    const other = await fetch(`${gw.metricsUrl}/graphql`);
    expect([other.status, await other.json()]).toEqual([404, { error: 'Not found' }]);
    const post = await fetch(`${gw.metricsUrl}/metrics`, { method: 'POST' });
    expect([post.status, post.headers.get('allow'), post.headers.get('cache-control')]).toEqual([405, 'GET, HEAD', 'no-store']);
  });

  it('is never served on the public port: /metrics there is the contract 404', async () => {
    const res = await fetch(`${gw.url}/metrics`);
    expect([res.status, res.headers.get('cache-control'), await res.json()]).toEqual([404, 'no-store', { error: 'Not found' }]);
    // Counted as what it is: an unmatched request.
    expect(requests((await scrape()).samples, { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
  });

  it('can be switched off (METRICS_PORT=off): no port, and the gateway serves as before', async () => {
    const off = await startGateway({ CATALOG_URL: subgraph.url, SUPERGRAPH_PATH: supergraph.path, METRICS_PORT: 'off' });
    try {
      expect(off.metricsUrl).toBeNull();
      expect(
        (
          await fetch(`${off.url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{"query":"{ cached }"}',
          })
        ).status,
      ).toBe(200);
    } finally {
      await off.stop();
    }
  });
});

describe('REST', () => {
  it('times every request by method, route template and status, never by raw path', async () => {
    const before = (await scrape()).samples;
    for (const id of ['41', '42']) expect((await fetch(`${gw.url}/posts/${id}`)).status).toBe(200);
    expect((await fetch(`${gw.url}/posts/43/comments`, { headers: { 'x-echo-status': '500' } })).status).toBe(500);
    expect((await fetch(`${gw.url}/nope/123`)).status).toBe(404);
    expect((await fetch(`${gw.url}/posts/41`, { method: 'DELETE' })).status).toBe(405);
    expect((await fetch(`${gw.url}/openapi.json`)).status).toBe(200);
    // Probes are not requests.
    await fetch(`${gw.url}/healthz`);

    const { text, samples } = await scrape();
    const delta = (labels: Record<string, string>) => requests(samples, labels) - requests(before, labels);
    expect(delta({ method: 'GET', route: '/posts/:id', status: '200' })).toBe(2);
    expect(delta({ method: 'GET', route: '/posts/:id/comments', status: '500' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(delta({ method: 'DELETE', route: 'unmatched', status: '405' })).toBe(1);
    expect(delta({ method: 'GET', route: 'documents', status: '200' })).toBe(1);
    for (const raw of ['/posts/41', '/nope/123', '/healthz', '/openapi.json']) expect(text).not.toContain(`"${raw}"`);
  });

  it('times each upstream request by service and its status; an unreachable service is `unreachable`', async () => {
    const before = (await scrape()).samples;
    expect((await fetch(`${gw.url}/hello`)).status).toBe(200);
    expect((await fetch(`${gw.url}/hello`, { headers: { 'x-echo-status': '503' } })).status).toBe(503);
    // auth's upstream is a closed port: the gateway answers 503 itself.
    const down = await fetch(`${gw.url}/auth/oauth/dev/start`);
    expect(down.status).toBe(503);

    const { samples } = await scrape();
    const upstream = (labels: Record<string, string>) =>
      metricValue(samples, 'halo_proxy_upstream_duration_seconds_count', labels) -
      metricValue(before, 'halo_proxy_upstream_duration_seconds_count', labels);
    expect(upstream({ service: 'content', status: '200' })).toBe(1);
    expect(upstream({ service: 'content', status: '503' })).toBe(1);
    expect(upstream({ service: 'auth', status: 'unreachable' })).toBe(1);
    expect(
      requests(samples, { route: '/auth/oauth/:provider/start', status: '503' }) -
        requests(before, { route: '/auth/oauth/:provider/start', status: '503' }),
    ).toBe(1);
  });
});

describe('GraphQL', () => {
  it('times each operation by type, name and outcome: ok, error (errors in the answer), anonymous', async () => {
    expect((await gql({ query: 'query ItemName($id: ID!) { item(id: $id) { name } }', variables: { id: '1' } })).body).toEqual({
      data: { item: { name: 'item 1' } },
    });
    expect((await gql({ query: 'query Broken { broken }' })).body.errors?.[0]).toBeDefined();
    await gql({ query: 'mutation Touch { touch(id: "2") { id } }' });
    await gql({ query: '{ item(id: "3") { id } }' });

    const { samples } = await scrape();
    expect(operations(samples, { operation_type: 'query', operation_name: 'ItemName', outcome: 'ok' })).toBe(1);
    expect(operations(samples, { operation_type: 'query', operation_name: 'Broken', outcome: 'error' })).toBe(1);
    expect(operations(samples, { operation_type: 'mutation', operation_name: 'Touch', outcome: 'ok' })).toBe(1);
    expect(operations(samples, { operation_type: 'query', operation_name: 'anonymous', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    // One HTTP request each, on the one /graphql route.
    expect(requests(samples, { method: 'POST', route: '/graphql', status: '200' })).toBeGreaterThanOrEqual(4);
  });

  it('counts operations refused before execution as rejected, by code: limits, @authenticated, parsing, bad credentials', async () => {
    const before = (await scrape()).samples;
    const deep = await gql({ query: 'query TooDeep { item(id: "1") { next { next { next { id } } } } }' });
    expect([deep.status, deep.body.errors?.[0]?.extensions?.code]).toEqual([400, 'MAX_DEPTH_LIMIT']);
    const anonymous = await gql({ query: 'query Secret { secret }' });
    expect([anonymous.status, anonymous.body.errors?.[0]?.extensions?.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await gql({ query: '{ item(id: ' })).status).toBe(400);
    // Bad credentials refuse the whole request before any operation is looked at.
    expect((await gql({ query: '{ cached }' }, { authorization: 'Bearer not-a-token' })).status).toBe(401);
    // A valid token passes @authenticated: the same operation is then ok.
    const token = signAccessToken({ sub: '1', name: 'Ana', role: 'user' }, TEST_JWT_SECRET, 60);
    expect((await gql({ query: 'query Secret { secret }' }, { authorization: `Bearer ${token}` })).body).toEqual({
      data: { secret: 's3cret' },
    });

    const { samples } = await scrape();
    const delta = (labels: Record<string, string>) => operations(samples, labels) - operations(before, labels);
    const rejected = (code: string) =>
      metricValue(samples, 'halo_graphql_rejections_total', { code }) - metricValue(before, 'halo_graphql_rejections_total', { code });
    expect(delta({ operation_type: 'query', operation_name: 'TooDeep', outcome: 'rejected' })).toBe(1);
    expect(delta({ operation_type: 'query', operation_name: 'Secret', outcome: 'rejected' })).toBe(1);
    expect(delta({ operation_type: 'query', operation_name: 'Secret', outcome: 'ok' })).toBe(1);
    expect(delta({ operation_type: 'unknown', operation_name: 'unknown', outcome: 'rejected' })).toBe(1);
    expect(rejected('MAX_DEPTH_LIMIT')).toBe(1);
    expect(rejected('GRAPHQL_PARSE_FAILED')).toBe(1);
    expect(rejected('UNAUTHENTICATED')).toBe(2);
    expect(requests(samples, { route: '/graphql', status: '401' }) - requests(before, { route: '/graphql', status: '401' })).toBe(2);
  });

  it('counts each operation of a batch, and response-cache lookups (hit, miss)', async () => {
    const before = (await scrape()).samples;
    const lookups = (s: MetricSample[], result: string) => metricValue(s, 'halo_graphql_response_cache_lookups_total', { result });
    const batch = await gql([{ query: 'query CachedA { cached }' }, { query: 'query CachedA { cached }' }]);
    expect(batch.status).toBe(200);
    await gql({ query: 'query CachedA { cached }' });

    const { samples } = await scrape();
    expect(
      operations(samples, { operation_name: 'CachedA', outcome: 'ok' }) - operations(before, { operation_name: 'CachedA', outcome: 'ok' }),
    ).toBe(3);
    // The batch's two ran side by side (both missed, or one hit); the third found the answer.
    expect(lookups(samples, 'hit') + lookups(samples, 'miss') - lookups(before, 'hit') - lookups(before, 'miss')).toBe(3);
    expect(lookups(samples, 'hit') - lookups(before, 'hit')).toBeGreaterThanOrEqual(1);
    expect(metricValue(samples, 'halo_graphql_response_cache_entries')).toBeGreaterThanOrEqual(1);
    expect(metricValue(samples, 'halo_graphql_response_cache_bytes')).toBeGreaterThan(0);
    // Read at scrape time, present even at rest.
    for (const name of [
      'halo_graphql_subscriptions',
      'halo_gateway_upstream_subscriptions',
      'halo_graphql_dedupe_in_flight',
      'halo_graphql_dedupe_waiting',
      'halo_graphql_dedupe_shared_total',
    ]) {
      expect(samples.some((s) => s.name === name)).toBe(true);
    }
  });

  it(`bounds operation names: the first ${MAX_OPERATION_NAMES} valid ones, then \`other\`; a client's junk never becomes a label`, async () => {
    const names = Array.from({ length: MAX_OPERATION_NAMES + 20 }, (_, i) => `Op${i}`);
    for (let i = 0; i < names.length; i += 50) {
      const res = await gql(names.slice(i, i + 50).map((name) => ({ query: `query ${name} { cached }` })));
      expect(res.status).toBe(200);
    }
    // A name no document has, sent alongside a document that does not parse.
    await gql({ query: '{', operationName: 'not a name {}' });

    const { text, samples } = await scrape();
    const labelled = new Set(
      samples.filter((s) => s.name === 'halo_graphql_operation_duration_seconds_count').map((s) => s.labels.operation_name),
    );
    const own = [...labelled].filter((n) => !['anonymous', 'unknown', 'other'].includes(n!));
    expect(own.length).toBe(MAX_OPERATION_NAMES);
    expect(labelled.has('other')).toBe(true);
    expect(text).not.toContain('not a name');
  });
});
