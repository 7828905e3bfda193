import WebSocket from 'ws';
import { createClient as createWsClient } from 'graphql-ws';
import { createClient as createSseClient } from 'graphql-sse';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { EDGE_SERVICE_NAMES, serviceUrlVar } from '@halo/kit/config';
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
  sys = await startE2ESystem({ postgres: true });
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
   * (offered, left to it, and why: the `reason` label of the lean gateway's counter), or neither
   * (refused before).
   */
  by: 'lean' | 'direct' | `apollo:${string}` | 'before';
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
  { name: '@authenticated refused', body: { query: '{ me { id } }' }, by: 'apollo:policy' },
  { name: 'over cost', body: { query: '{ products(limit: 999) { data { id } } }' }, by: 'apollo:policy' },
  {
    name: 'over depth',
    body: { query: '{ posts(first: 1) { edges { node { comments { post { author { posts { id } } } } } } } }' },
    by: 'apollo:policy',
  },
  { name: 'alias cap', body: { query: aliases(16) }, by: 'apollo:document' },
  { name: 'token cap', body: { query: `{ product(id: "1") { ${'id '.repeat(1000)}} }` }, by: 'apollo:document' },
  { name: 'syntax error', body: { query: '{ product(id: "1") { id }' }, by: 'apollo:document' },
  { name: 'unknown field', body: { query: '{ product(id: "1") { nope } }' }, by: 'apollo:document' },
  { name: 'two operations, operationName', body: { query: TWO_OPERATIONS, operationName: 'B' }, by: 'direct' },
  { name: 'two operations, no operationName', body: { query: TWO_OPERATIONS }, by: 'apollo:operation' },
  { name: 'two operations, unknown operationName', body: { query: TWO_OPERATIONS, operationName: 'C' }, by: 'apollo:operation' },
  { name: 'variables', body: { query: BY_ID, variables: { id: '1' } }, by: 'direct' },
  {
    name: 'variables the operation does not declare',
    body: { query: '{ product(id: "1") { id } }', variables: { id: '1' } },
    by: 'direct',
  },
  { name: 'an empty operationName', body: { query: TWO_OPERATIONS, operationName: '' }, by: 'apollo:operation' },
  { name: 'variables, bad type', body: { query: BY_ID, variables: { id: { no: 1 } } }, by: 'apollo:variables' },
  { name: 'variables, missing required', body: { query: BY_ID, variables: {} }, by: 'apollo:variables' },
  { name: 'variables, not an object', body: { query: BY_ID, variables: '{"id":"1"}' }, by: 'apollo:shape' },
  { name: 'subgraph error (NOT_FOUND and null)', body: { query: '{ product(id: "999999") { id } }' }, by: 'lean' },
  {
    name: 'bad token',
    body: { query: '{ products { data { id } } }' },
    headers: { authorization: 'Bearer nope' },
    by: 'apollo:credentials',
  },
  { name: 'malformed JSON', body: '{"query": "{ products { data { id } } }"', by: 'before' },
  { name: 'not JSON', body: 'query=1', headers: { 'content-type': 'text/plain' }, by: 'apollo:shape' },
  { name: 'empty object', body: {}, by: 'apollo:shape' },
  { name: 'an extra field', body: { query: '{ __typename }', extra: 1 }, by: 'apollo:shape' },
  // Apollo Client 4 names itself in every operation's extensions: nothing there to act on.
  {
    name: "Apollo Client 4's clientLibrary extension",
    body: { query: '{ __typename }', extensions: { clientLibrary: { name: '@apollo/client', version: '4.3.8' } } },
    by: 'lean',
  },
  { name: 'any other extension', body: { query: '{ __typename }', extensions: { clientLibrary: {}, tracing: true } }, by: 'apollo:shape' },
  { name: 'introspection disabled', body: { query: '{ __schema { types { name } } }' }, by: 'apollo:document' },
  { name: 'batch', body: [{ query: '{ __typename }' }, { query: '{ product(id: "1") { id } }' }], by: 'apollo:shape' },
  {
    name: 'APQ registration',
    body: { query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'ab' } } },
    by: 'before',
  },
  { name: 'mutation refused anonymously', body: { query: 'mutation { deleteProduct(id: "999999") }' }, by: 'apollo:policy' },
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
    by: 'apollo:accept',
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
  { name: 'Accept: text/html only', body: { query: '{ product(id: "1") { id } }' }, headers: { accept: 'text/html' }, by: 'apollo:accept' },
];

/** Headers whose value is the moment, the request or the process's own counters. */
const PER_REQUEST_HEADERS = /^(date|x-request-id|traceparent|tracestate|ratelimit.*|x-ratelimit.*|retry-after)$/;

/** Every response header but those that differ per request or per process. */
function headersOf(res: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!PER_REQUEST_HEADERS.test(name)) headers[name] = value;
  });
  return headers;
}

async function ask(gw: RunningGateway, c: Case) {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...c.headers },
    body: typeof c.body === 'string' ? c.body : JSON.stringify(c.body),
  });
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    cacheControl: res.headers.get('cache-control'),
    requestId: res.headers.get('x-request-id') !== null,
    headers: headersOf(res),
    body: await res.text(),
  };
}

/** The lean gateway's counter of who answered, by `lean`, `direct`, `cache` and `apollo:<reason>`. */
async function leanCounts(): Promise<Map<string, number>> {
  const text = await (await fetch(`${lean.metricsUrl!}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^halo_graphql_lean_requests_total\{by="(\w+)"(?:,reason="(\w+)")?[^}]*\} (\d+)$/gm)) {
    counts.set(m[2] ? `${m[1]}:${m[2]}` : m[1]!, Number(m[3]));
  }
  return counts;
}

/** Which answered between two readings of the counters. */
const answeredBy = (before: Map<string, number>, after: Map<string, number>) =>
  [...after].find(([key, n]) => n > (before.get(key) ?? 0))?.[0] ?? 'before';

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
    const byLean = (counts: Map<string, number>) => (counts.get('lean') ?? 0) + (counts.get('direct') ?? 0);
    expect(byLean(after) - byLean(before)).toBe(6);
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

/**
 * The same refusal on every transport: an operation the edge refuses gets the same code and
 * message whether it came as a POST (the lean gateway, which leaves it to Apollo Server, and
 * the Apollo-only one), a GET, one operation of a batch, a WebSocket `subscribe` or an SSE
 * request; the HTTP ones the same status and headers too, never a cacheable answer.
 */
describe('every transport refuses alike', () => {
  interface Refusal {
    name: string;
    query: string;
    variables?: Record<string, unknown>;
    operationName?: string;
    /** A mutation: never over GET (405 there, its own rule). */
    mutation?: boolean;
  }
  const REFUSALS: Refusal[] = [
    { name: '@authenticated', query: '{ me { id } }' },
    { name: 'over cost', query: '{ products(limit: 999) { data { id } } }' },
    { name: 'over depth', query: '{ posts(first: 1) { edges { node { comments { post { author { posts { id } } } } } } } }' },
    { name: 'alias cap', query: aliases(16) },
    { name: 'token cap', query: `{ product(id: "1") { ${'id '.repeat(1000)}} }` },
    { name: 'syntax error', query: '{ product(id: "1") { id }' },
    { name: 'unknown field', query: '{ product(id: "1") { nope } }' },
    { name: 'introspection disabled', query: '{ __schema { types { name } } }' },
    { name: 'variables, bad type', query: BY_ID, variables: { id: { no: 1 } } },
    { name: 'variables, missing required', query: BY_ID, variables: {} },
    { name: 'two operations, no operationName', query: TWO_OPERATIONS },
    { name: 'two operations, unknown operationName', query: TWO_OPERATIONS, operationName: 'C' },
    { name: 'mutation, anonymous', query: 'mutation { deleteProduct(id: "999999") }', mutation: true },
  ];

  type Seen = { status?: number; headers?: Record<string, string>; errors: { message: string; code: unknown }[] };
  const errorsOf = (errors: unknown): Seen['errors'] =>
    (errors as { message: string; extensions?: { code?: unknown } }[]).map((e) => ({ message: e.message, code: e.extensions?.code }));

  async function overHttp(gw: RunningGateway, r: Refusal, how: 'post' | 'get' | 'batch'): Promise<Seen> {
    const operation = {
      query: r.query,
      ...(r.variables ? { variables: r.variables } : {}),
      ...(r.operationName ? { operationName: r.operationName } : {}),
    };
    const res =
      how === 'get'
        ? await fetch(
            `${gw.url}/graphql?${new URLSearchParams({
              query: r.query,
              ...(r.variables ? { variables: JSON.stringify(r.variables) } : {}),
              ...(r.operationName ? { operationName: r.operationName } : {}),
            }).toString()}`,
            { headers: { 'apollo-require-preflight': 'true' } },
          )
        : await fetch(`${gw.url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(how === 'batch' ? [operation] : operation),
          });
    const body = (await res.json()) as { errors: unknown } | { errors: unknown }[];
    const one = Array.isArray(body) ? body[0]! : body;
    // A batch answers 200 with each operation's errors inside (Apollo Server's batching).
    return {
      ...(how === 'batch' ? {} : { status: res.status, headers: headersOf(res) }),
      errors: errorsOf(one.errors),
    };
  }

  function overWebSocket(r: Refusal): Promise<Seen> {
    const client = createWsClient({
      url: `${lean.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      shouldRetry: () => false,
    });
    return new Promise<Seen>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer over WebSocket')), 10_000);
      const done = (errors: unknown) => {
        clearTimeout(timer);
        void client.dispose();
        resolve({ errors: errorsOf(errors) });
      };
      client.subscribe(
        { query: r.query, variables: r.variables ?? {}, operationName: r.operationName ?? null },
        { next: (v) => done(v.errors), error: (e) => done(e), complete: () => undefined },
      );
    });
  }

  function overSse(r: Refusal): Promise<Seen> {
    const client = createSseClient({ url: `${lean.url}/graphql/stream`, retryAttempts: 0 });
    return new Promise<Seen>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer over SSE')), 10_000);
      const done = (errors: unknown) => {
        clearTimeout(timer);
        client.dispose();
        resolve({ errors: errorsOf(errors) });
      };
      client.subscribe(
        { query: r.query, variables: r.variables ?? {}, ...(r.operationName ? { operationName: r.operationName } : {}) },
        { next: (v) => done(v.errors), error: (e) => done((e as { errors?: unknown }).errors ?? e), complete: () => undefined },
      );
    });
  }

  it.each(REFUSALS.map((r) => [r.name, r] as const))('%s', async (_name, r) => {
    const post = await overHttp(lean, r, 'post');
    expect(post.status).toBeGreaterThanOrEqual(400);
    expect(post.headers).toEqual(
      expect.objectContaining({ 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' }),
    );
    expect(post.errors).toHaveLength(1);
    expect(await overHttp(apollo, r, 'post')).toEqual(post);
    if (!r.mutation) expect(await overHttp(lean, r, 'get')).toEqual(post);
    const { errors } = post;
    expect(await overHttp(lean, r, 'batch')).toEqual({ errors });
    expect(await overWebSocket(r)).toEqual({ errors });
    expect(await overSse(r)).toEqual({ errors });
  });
});
