import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { EDGE_SERVICE_NAMES, serviceUrlVar } from '@halo/kit';
import { startGateway, type RunningGateway } from '../gateway/test/helpers';
import { bearer, startE2ESystem } from './helpers';

/**
 * The proof of the gateway's lean path (ADR 0016) and of its direct answers (ADR 0019): two
 * gateways over one real system, the same configuration but GRAPHQL_LEAN, answer every request
 * with the same status, content type, Cache-Control, request id and body bytes. The lean gateway's
 * metrics say who answered each request (the executor, one subgraph's data as it came, or Apollo
 * Server), so a case meant for one cannot silently pass through another on both sides.
 */

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let lean: RunningGateway;
let apollo: RunningGateway;

beforeAll(async () => {
  sys = await startE2ESystem({ portOffset: 2900, postgres: true });
  const env: Record<string, string> = {
    JWT_SECRET: TEST_JWT_SECRET,
    GRAPHQL_INTROSPECTION: 'false',
    // The response cache would answer repeated anonymous queries itself (gateway/test/response-cache.test.ts
    // compares its hits on both paths).
    GRAPHQL_RESPONSE_CACHE_MIB: '0',
    GRAPHQL_DEDUPE_INFLIGHT: 'false',
    // Small enough that one caller's repeated expensive query is refused (429), far above the rest.
    RATE_LIMIT_GRAPHQL_COST: '5000',
  };
  for (const name of EDGE_SERVICE_NAMES) env[serviceUrlVar(name)] = sys.direct(name);
  lean = await startGateway({ ...env, GRAPHQL_LEAN: 'true' });
  apollo = await startGateway({ ...env, GRAPHQL_LEAN: 'false' });
}, 180_000);

afterAll(async () => {
  await lean?.stop();
  await apollo?.stop();
  await sys?.stop();
});

const ADMIN = bearer('1', 'Admin', 'admin');

interface Case {
  name: string;
  /** The JSON body, or the raw bytes when a string. */
  body: unknown;
  headers?: Record<string, string>;
  /**
   * Who answers on the lean gateway (once it has run the operation before): the lean path through
   * the executor, the lean path with one subgraph's data as it came (ADR 0019), Apollo Server
   * (offered, left to it), or neither (refused before).
   */
  by: 'lean' | 'direct' | 'apollo' | 'before';
}

const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `p${i}: product(id: "1") { id }`).join(' ')} }`;
const TWO_OPERATIONS = 'query A { product(id: "1") { id name } } query B { products { data { id } } }';
const BY_ID = 'query ById($id: ID!) { product(id: $id) { id name } }';

const CASES: Case[] = [
  { name: 'public query', body: { query: '{ products { data { id name } } }' }, by: 'direct' },
  {
    name: 'public query, null variables and operationName',
    body: { query: '{ product(id: "2") { id } }', variables: null, operationName: null },
    by: 'direct',
  },
  { name: '__typename', body: { query: '{ __typename }' }, by: 'lean' },
  { name: 'authenticated query (private)', body: { query: '{ products { data { id name } } }' }, headers: ADMIN, by: 'direct' },
  // `me` is two fetches (auth, then content for name and email).
  { name: 'me', body: { query: '{ me { id name email } }' }, headers: bearer('2', 'Alice', 'user'), by: 'lean' },
  {
    name: 'nested, with a caller',
    body: { query: '{ posts(first: 3) { edges { node { title author { name } comments { body author { name } } } } } }' },
    headers: ADMIN,
    by: 'direct',
  },
  { name: '@authenticated refused', body: { query: '{ me { id } }' }, by: 'apollo' },
  { name: 'over cost', body: { query: '{ products(limit: 999) { data { id } } }' }, by: 'apollo' },
  {
    name: 'over depth',
    body: { query: '{ posts(first: 1) { edges { node { comments { post { author { posts { id } } } } } } } }' },
    by: 'apollo',
  },
  { name: 'alias cap', body: { query: aliases(16) }, by: 'apollo' },
  { name: 'token cap', body: { query: `{ product(id: "1") { ${'id '.repeat(1000)}} }` }, by: 'apollo' },
  { name: 'syntax error', body: { query: '{ product(id: "1") { id }' }, by: 'apollo' },
  { name: 'unknown field', body: { query: '{ product(id: "1") { nope } }' }, by: 'apollo' },
  { name: 'two operations, operationName', body: { query: TWO_OPERATIONS, operationName: 'B' }, by: 'direct' },
  { name: 'two operations, no operationName', body: { query: TWO_OPERATIONS }, by: 'apollo' },
  { name: 'two operations, unknown operationName', body: { query: TWO_OPERATIONS, operationName: 'C' }, by: 'apollo' },
  { name: 'variables', body: { query: BY_ID, variables: { id: '1' } }, by: 'direct' },
  {
    name: 'variables the operation does not declare',
    body: { query: '{ product(id: "1") { id } }', variables: { id: '1' } },
    by: 'direct',
  },
  { name: 'an empty operationName', body: { query: TWO_OPERATIONS, operationName: '' }, by: 'apollo' },
  { name: 'variables, bad type', body: { query: BY_ID, variables: { id: { no: 1 } } }, by: 'apollo' },
  { name: 'variables, missing required', body: { query: BY_ID, variables: {} }, by: 'apollo' },
  { name: 'variables, not an object', body: { query: BY_ID, variables: '{"id":"1"}' }, by: 'apollo' },
  { name: 'subgraph error (NOT_FOUND and null)', body: { query: '{ product(id: "999999") { id } }' }, by: 'lean' },
  { name: 'bad token', body: { query: '{ products { data { id } } }' }, headers: { authorization: 'Bearer nope' }, by: 'apollo' },
  { name: 'malformed JSON', body: '{"query": "{ products { data { id } } }"', by: 'before' },
  { name: 'not JSON', body: 'query=1', headers: { 'content-type': 'text/plain' }, by: 'apollo' },
  { name: 'empty object', body: {}, by: 'apollo' },
  { name: 'an extra field', body: { query: '{ __typename }', extra: 1 }, by: 'apollo' },
  { name: 'introspection disabled', body: { query: '{ __schema { types { name } } }' }, by: 'apollo' },
  { name: 'batch', body: [{ query: '{ __typename }' }, { query: '{ product(id: "1") { id } }' }], by: 'apollo' },
  {
    name: 'APQ registration',
    body: { query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'ab' } } },
    by: 'before',
  },
  { name: 'mutation refused anonymously', body: { query: 'mutation { deleteProduct(id: "999999") }' }, by: 'apollo' },
  { name: 'Accept: */*', body: { query: '{ product(id: "1") { id } }' }, headers: { accept: '*/*' }, by: 'direct' },
  {
    name: 'Accept: application/graphql-response+json',
    body: { query: '{ product(id: "1") { id } }' },
    headers: { accept: 'application/graphql-response+json' },
    by: 'direct',
  },
  {
    name: 'Accept: both, with weights',
    body: { query: '{ product(id: "1") { id } }' },
    headers: { accept: 'application/json;q=0.5, application/graphql-response+json' },
    by: 'apollo',
  },
  // ADR 0019's edges: what one subgraph answers whole, and what it hands to the executor.
  {
    name: 'aliases, __typename, a null field',
    body: { query: '{ a: product(id: "1") { t: __typename n: name id } b: product(id: "999999") { id } }' },
    by: 'lean',
  },
  { name: 'aliases and __typename', body: { query: '{ a: product(id: "1") { t: __typename n: name id } }' }, by: 'direct' },
  { name: 'a fragment', body: { query: '{ products { data { ...P } } } fragment P on Product { id name }' }, by: 'lean' },
  { name: 'a directive', body: { query: '{ products { data { id name @include(if: true) } } }' }, by: 'lean' },
  { name: 'two subgraphs', body: { query: '{ me { id orders { id } } }' }, headers: bearer('2', 'Alice', 'user'), by: 'lean' },
  {
    name: 'an operation variable with a default, left out',
    body: { query: 'query L($n: Int = 2) { products(limit: $n) { data { id } } }' },
    by: 'direct',
  },
  { name: 'Accept: text/html only', body: { query: '{ product(id: "1") { id } }' }, headers: { accept: 'text/html' }, by: 'apollo' },
];

/** Headers whose value is the moment, the request or the process's own counters. */
const PER_REQUEST_HEADERS = /^(date|x-request-id|traceparent|tracestate|ratelimit.*|x-ratelimit.*|retry-after)$/;

async function ask(gw: RunningGateway, c: Case) {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...c.headers },
    body: typeof c.body === 'string' ? c.body : JSON.stringify(c.body),
  });
  // Every response header but those that differ per request or per process.
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!PER_REQUEST_HEADERS.test(name)) headers[name] = value;
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    cacheControl: res.headers.get('cache-control'),
    requestId: res.headers.get('x-request-id') !== null,
    headers,
    body: await res.text(),
  };
}

async function leanCounts(): Promise<{ lean: number; direct: number; apollo: number }> {
  const text = await (await fetch(`${lean.metricsUrl!}/metrics`)).text();
  const count = (by: string) => Number(new RegExp(`halo_graphql_lean_requests_total\\{by="${by}"[^}]*\\} (\\d+)`).exec(text)?.[1]);
  return { lean: count('lean'), direct: count('direct'), apollo: count('apollo') };
}

/** Which answered between two readings of the counters. */
const answeredBy = (before: Awaited<ReturnType<typeof leanCounts>>, after: Awaited<ReturnType<typeof leanCounts>>) =>
  after.lean > before.lean ? 'lean' : after.direct > before.direct ? 'direct' : after.apollo > before.apollo ? 'apollo' : 'before';

describe('the lean path answers exactly as Apollo Server does', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    // The first run of an operation goes through the executor, which resolves its plan (ADR 0019);
    // an earlier case may have run the same operation already.
    const first = await leanCounts();
    const viaLeanFirst = await ask(lean, c);
    expect(c.by === 'direct' ? ['lean', 'direct'] : [c.by]).toContain(answeredBy(first, await leanCounts()));
    const before = await leanCounts();
    const viaLean = await ask(lean, c);
    const after = await leanCounts();
    const viaApollo = await ask(apollo, c);
    expect(viaLean).toEqual(viaApollo);
    expect(viaLeanFirst).toEqual(viaApollo);
    expect(answeredBy(before, after)).toBe(c.by);
  });

  it('the cost budget: a caller over it is refused 429 RATE_LIMITED by the lean path as by Apollo Server', async () => {
    const c: Case = {
      name: 'cost',
      body: { query: '{ products(limit: 998) { data { id } } }' },
      headers: bearer('77', 'Spender', 'user'),
      by: 'lean',
    };
    const before = await leanCounts();
    const viaLean = [];
    const viaApollo = [];
    for (let i = 0; i < 6; i++) viaLean.push(await ask(lean, c));
    for (let i = 0; i < 6; i++) viaApollo.push(await ask(apollo, c));
    const after = await leanCounts();
    expect(after.lean + after.direct - before.lean - before.direct).toBe(6);
    expect(viaLean).toEqual(viaApollo);
    expect(viaLean.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(JSON.parse(viaLean[5]!.body).errors[0].extensions.code).toBe('RATE_LIMITED');
  });

  it('an operation is answered directly from its second run on, once the executor resolved its plan', async () => {
    const c: Case = { name: 'fresh', body: { query: '{ fresh: products { data { id } } }' }, by: 'direct' };
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const before = await leanCounts();
      expect(await ask(lean, c)).toEqual(await ask(apollo, c));
      runs.push(answeredBy(before, await leanCounts()));
    }
    expect(runs).toEqual(['lean', 'direct', 'direct']);
  });

  it('the cases answered by the lean path include data, a private answer and a public cacheable one', async () => {
    const pub = await ask(lean, CASES[0]!);
    expect([pub.status, pub.cacheControl]).toEqual([200, 'max-age=60, public']);
    const priv = await ask(lean, CASES[3]!);
    expect([priv.status, priv.cacheControl]).toEqual([200, 'max-age=60, private']);
    expect(JSON.parse(priv.body).data.products.data.length).toBeGreaterThan(0);
  });
});
