import type { IncomingHttpHeaders } from 'node:http';
import { createClient } from 'graphql-ws';
import { meros } from 'meros/browser';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { composeSupergraph, startGateway, startSubgraph, tempSupergraph, type RunningGateway, type TestSubgraph } from './helpers';

/**
 * `@defer` through the gateway (docs/api/graphql.md "Deferred fragments"): real subgraphs behind a
 * real gateway. catalog answers products at once; content's `reviewsSlow` waits on a latch the
 * test holds, so "the first part does not wait for the slow field" is shown by order of arrival —
 * the first part is read while the latch is still closed — never by timing.
 */
const CATALOG = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Product @key(fields: "id") { id: ID! name: String! price: Int! related: Product }
  type Query { product(id: ID!): Product products: [Product!]! }
`;
const CONTENT = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@authenticated"])
  type Product @key(fields: "id") {
    id: ID!
    reviewsSlow: [String!]!
    reviewFails: String
    secretNote: String @authenticated
  }
`;

class Latch {
  private waiters: (() => void)[] = [];
  private opened = true;
  wait(): Promise<void> {
    return this.opened ? Promise.resolve() : new Promise((r) => this.waiters.push(r));
  }
  open(): void {
    this.opened = true;
    for (const go of this.waiters.splice(0)) go();
  }
  close(): void {
    this.opened = false;
  }
}

const latch = new Latch();
const products = [1, 2, 3].map((i) => ({ id: String(i), name: `Product ${i}`, price: i * 100 }));
let catalog: TestSubgraph;
let content: TestSubgraph;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  catalog = await startSubgraph(CATALOG, {
    Query: { product: (_: unknown, { id }: { id: string }) => products.find((p) => p.id === id) ?? null, products: () => products },
    Product: { __resolveReference: (ref: { id: string }) => products.find((p) => p.id === ref.id), related: () => products[0] },
  });
  content = await startSubgraph(CONTENT, {
    Product: {
      __resolveReference: (ref: { id: string }) => ref,
      reviewsSlow: async (p: { id: string }) => {
        await latch.wait();
        return [`review of ${p.id}`];
      },
      reviewFails: () => {
        throw new Error('reviews are down');
      },
      secretNote: (_p: unknown, _a: unknown, ctx: { headers: IncomingHttpHeaders }) =>
        `for ${ctx.headers.authorization ? 'you' : 'nobody'}`,
    },
  });
  supergraph = tempSupergraph(
    composeSupergraph([
      { name: 'catalog', sdl: CATALOG, url: 'http://127.0.0.1:1/graphql' },
      { name: 'content', sdl: CONTENT, url: 'http://127.0.0.1:1/graphql' },
    ]),
  );
  gw = await startGateway({
    CATALOG_URL: catalog.url,
    CONTENT_URL: content.url,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
    GRAPHQL_MAX_DEPTH: '4',
    GRAPHQL_MAX_COST: '400',
    GRAPHQL_RESPONSE_CACHE_MIB: '8',
    GRAPHQL_INTROSPECTION: 'true',
  });
}, 60_000);

afterEach(() => latch.open());

afterAll(async () => {
  await gw?.stop();
  await catalog?.stop();
  await content?.stop();
  supergraph?.remove();
});

/** What Apollo Client 4's HttpLink sends. */
const INCREMENTAL_ACCEPT = 'multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9';

type Json = any;

function send(query: string, opts: { accept?: string; variables?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
  return fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: opts.accept ?? INCREMENTAL_ACCEPT, ...opts.headers },
    body: JSON.stringify({ query, variables: opts.variables }),
  });
}

/** The parts of a multipart answer, as a strict multipart/mixed parser (meros) reads them, each as it arrives. */
async function* parts(res: Response): AsyncGenerator<Json> {
  const parsed = await meros<Json>(res);
  if (!(Symbol.asyncIterator in parsed)) throw new Error(`not multipart: ${res.headers.get('content-type')}`);
  for await (const part of parsed as AsyncIterable<{ json: boolean; body: Json }>) {
    expect(part.json).toBe(true);
    yield part.body;
  }
}

/** Every part, then the answer a client assembles from them (items merged at their paths). */
async function allParts(res: Response): Promise<{ payloads: Json[]; merged: Json }> {
  const payloads: Json[] = [];
  for await (const p of parts(res)) payloads.push(p);
  const merged = structuredClone(payloads[0]);
  delete merged.hasNext;
  for (const p of payloads.slice(1)) {
    for (const item of p.incremental ?? []) {
      if (item.errors) merged.errors = [...(merged.errors ?? []), ...item.errors];
      let target = merged.data;
      for (const key of item.path) target = target[key];
      Object.assign(target, item.data);
    }
  }
  return { payloads, merged };
}

const bearer = () => ({ authorization: `Bearer ${signAccessToken({ sub: '7', name: 'Seven', role: 'user' }, TEST_JWT_SECRET, 60)}` });

describe('@defer through the gateway', () => {
  it('is declared in the schema the gateway serves', async () => {
    const res = await send('{ __schema { directives { name args { name } locations } } }', { accept: 'application/json' });
    const body: Json = await res.json();
    const defer = body.data.__schema.directives.find((d: Json) => d.name === 'defer');
    expect(defer).toEqual({ name: 'defer', args: [{ name: 'if' }, { name: 'label' }], locations: ['FRAGMENT_SPREAD', 'INLINE_FRAGMENT'] });
    // @stream is not offered: the executor cannot answer a list item by item.
    expect(body.data.__schema.directives.map((d: Json) => d.name)).not.toContain('stream');
  });

  it('sends the primary part before the slow deferred field answers, then the rest', async () => {
    latch.close();
    const res = await send('query P { product(id: "2") { name ... @defer(label: "reviews") { reviewsSlow } } }');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('multipart/mixed; boundary="-"; deferSpec=20220824');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const it = parts(res);
    // Read while reviewsSlow is still held: had the gateway waited for it, this would never come.
    const first = await it.next();
    expect(first.value).toEqual({ hasNext: true, data: { product: { name: 'Product 2' } } });
    latch.open();
    const second = await it.next();
    expect(second.value).toEqual({
      hasNext: false,
      incremental: [{ data: { reviewsSlow: ['review of 2'] }, path: ['product'], label: 'reviews' }],
    });
    expect((await it.next()).done).toBe(true);
  });

  it('assembles to the answer sent whole, byte for byte', async () => {
    const deferred = `query Q($id: ID!) { product(id: $id) { id name ...Slow @defer } products { id name ... @defer { reviewsSlow } } }
      fragment Slow on Product { price reviewsSlow }`;
    const whole = deferred.replace(/ @defer/g, '');
    const { merged, payloads } = await allParts(await send(deferred, { variables: { id: '1' } }));
    expect(payloads.length).toBeGreaterThan(1);
    // A list: one item per entry, each at its index.
    const listItems = payloads.flatMap((p) => p.incremental ?? []).filter((i: Json) => i.path[0] === 'products');
    expect(listItems.map((i: Json) => i.path)).toEqual([
      ['products', 0],
      ['products', 1],
      ['products', 2],
    ]);
    const plain: Json = await (await send(whole, { variables: { id: '1' }, accept: 'application/json' })).json();
    expect(JSON.stringify(merged)).toBe(JSON.stringify(plain));
  });

  it('defers nothing when `if` is false, or when the client takes no parts', async () => {
    const query = 'query F($d: Boolean!) { product(id: "3") { name ... @defer(if: $d) { reviewsSlow } } }';
    const off = await send(query, { variables: { d: false } });
    expect(off.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    expect(await off.json()).toEqual({ data: { product: { name: 'Product 3', reviewsSlow: ['review of 3'] } } });
    const literal = await send('{ product(id: "3") { name ... @defer(if: false) { reviewsSlow } } }');
    expect(literal.headers.get('content-type')).toMatch(/json/);
    // A client that does not ask for parts gets one answer, on every path (lean and Apollo Server's GET).
    const json = await send('{ product(id: "3") { name ... @defer { reviewsSlow } } }', { accept: 'application/json' });
    expect(await json.json()).toEqual({ data: { product: { name: 'Product 3', reviewsSlow: ['review of 3'] } } });
    const get = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('{ product(id: "3") { name ... @defer { reviewsSlow } } }')}`, {
      headers: { accept: 'application/json', 'apollo-require-preflight': 'true' },
    });
    expect(await get.json()).toEqual({ data: { product: { name: 'Product 3', reviewsSlow: ['review of 3'] } } });
  });

  it('gives parts to a multipart/mixed that names no spec (GraphiQL), the whole answer to another spec', async () => {
    const query = '{ product(id: "3") { name ... @defer { reviewsSlow } } }';
    const graphiql = await send(query, { accept: 'application/graphql-response+json, application/json, multipart/mixed' });
    expect(graphiql.headers.get('content-type')).toBe('multipart/mixed; boundary="-"; deferSpec=20220824');
    const { merged } = await allParts(graphiql);
    expect(merged).toEqual({ data: { product: { name: 'Product 3', reviewsSlow: ['review of 3'] } } });
    const newer = await send(query, { accept: 'multipart/mixed;incrementalSpec=v0.2, application/json' });
    expect(newer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await newer.json()).toEqual({ data: { product: { name: 'Product 3', reviewsSlow: ['review of 3'] } } });
  });

  it('sends an object whose every field is deferred as {} first, nothing the client did not ask for', async () => {
    const { payloads, merged } = await allParts(await send('{ product(id: "1") { ... @defer { name } } }'));
    expect(payloads[0]).toEqual({ hasNext: true, data: { product: {} } });
    expect(merged).toEqual({ data: { product: { name: 'Product 1' } } });
  });

  it("puts a deferred field's error in its own part, with its path, and leaves the primary part clean", async () => {
    const { payloads } = await allParts(await send('{ product(id: "1") { name ... @defer { reviewFails } } }'));
    expect(payloads[0]).toEqual({ hasNext: true, data: { product: { name: 'Product 1' } } });
    const [item] = payloads[1].incremental;
    expect(item.data).toEqual({ reviewFails: null });
    expect(item.path).toEqual(['product']);
    expect(item.errors).toEqual([expect.objectContaining({ message: 'reviews are down', path: ['product', 'reviewFails'] })]);
    expect(payloads.at(-1).hasNext).toBe(false);
  });

  it('refuses the same operations with and without @defer: depth, cost, authentication', async () => {
    const cases = [
      // Over the depth limit (GRAPHQL_MAX_DEPTH=4) only inside the deferred fragment.
      '{ product(id: "1") { name ... @defer { related { related { related { related { name } } } } } } }',
      // Deferred fields count towards the cost: the deferred part alone exceeds GRAPHQL_MAX_COST=400.
      '{ product(id: "1") { name } products { ... @defer { reviewsSlow reviewFails secretNote name price related { name } } } }',
      // @authenticated inside a deferred fragment, asked anonymously.
      '{ product(id: "1") { name ... @defer { secretNote } } }',
    ];
    for (const query of cases) {
      const withDefer: Json = await (await send(query)).json();
      const without: Json = await (await send(query.replace(/ @defer/g, ''), { accept: 'application/json' })).json();
      expect(withDefer.errors?.[0]?.extensions?.code).toBeDefined();
      expect(withDefer.errors?.[0]?.extensions?.code).toBe(without.errors?.[0]?.extensions?.code);
      expect(withDefer.data).toBeUndefined();
    }
    // Signed in, the protected deferred field arrives in its part.
    const { payloads } = await allParts(await send('{ product(id: "1") { name ... @defer { secretNote } } }', { headers: bearer() }));
    expect(payloads[1].incremental[0].data).toEqual({ secretNote: 'for you' });
  });

  it("spends from the caller's cost budget what runs: the sum of the parts' operations", async () => {
    const left = async (res: Response) => {
      await res.arrayBuffer();
      return Number(/"graphql-cost";r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1]);
    };
    const json = { accept: 'application/json' };
    let before = await left(await send('{ products { id } }', json));
    const spent = async (res: Promise<Response>) => {
      const after = await left(await res);
      const cost = before - after;
      before = after;
      return cost;
    };
    const primary = await spent(send('{ products { name } }', json));
    const part = await spent(send('{ products { ... { price } } }', json));
    const deferred = await spent(send('{ products { name ... @defer { price } } }'));
    const whole = await spent(send('{ products { name price } }', json));
    expect(primary).toBeGreaterThan(0);
    expect(deferred).toBe(primary + part);
    expect(deferred).toBeGreaterThan(whole);
  });

  it('never stores a part in the response cache, and counts the operation once', async () => {
    const query = '{ products { name ... @defer { price } } }';
    await allParts(await send(query));
    const plain = await send(query.replace(' @defer', ''), { accept: 'application/json' });
    // The first whole answer is a miss (a stored part would have been served with an Age).
    expect(plain.headers.get('age')).toBeNull();
    const metrics = await (await fetch(`${gw.metricsUrl}/metrics`)).text();
    const named = metrics
      .split('\n')
      .filter((l) => l.startsWith('halo_graphql_operation_duration_seconds_count') && l.includes('operation_type="query"'));
    expect(named.length).toBeGreaterThan(0);
    const before = sumOf(metrics);
    await allParts(await send('query Counted { product(id: "2") { name ... @defer { reviewsSlow } ... @defer { price } } }'));
    const after = sumOf(await (await fetch(`${gw.metricsUrl}/metrics`)).text());
    expect(after - before).toBe(1);
  });
});

function sumOf(metrics: string): number {
  return metrics
    .split('\n')
    .filter((l) => l.startsWith('halo_graphql_operation_duration_seconds_count'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

describe('@defer over WebSocket and Server-Sent Events', () => {
  const QUERY = 'query W { product(id: "2") { name ... @defer(label: "r") { reviewsSlow } } }';
  const FIRST = { hasNext: true, data: { product: { name: 'Product 2' } } };
  const REST = { hasNext: false, incremental: [{ data: { reviewsSlow: ['review of 2'] }, path: ['product'], label: 'r' }] };

  it('sends each part as its own `next` message, the first before the slow field answers', async () => {
    latch.close();
    const client = createClient({ url: `${gw.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
    const received: Json[] = [];
    let firstSeen: () => void = () => undefined;
    const first = new Promise<void>((r) => (firstSeen = r));
    const done = new Promise<void>((resolve, reject) => {
      client.subscribe(
        { query: QUERY },
        {
          next: (value) => {
            received.push(value);
            firstSeen();
          },
          error: reject,
          complete: resolve,
        },
      );
    });
    try {
      await first;
      // The latch still holds reviewsSlow: only the primary part can have come.
      expect(received).toEqual([FIRST]);
      latch.open();
      await done;
      expect(received).toEqual([FIRST, REST]);
    } finally {
      await client.dispose();
    }
  });

  it('sends each part as its own `next` event on /graphql/stream', async () => {
    latch.close();
    const res = await fetch(`${gw.url}/graphql/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: QUERY }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const events = () =>
      text
        .split('\n\n')
        .filter((e) => e.startsWith('event: next'))
        .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));
    while (events().length < 1) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(events()).toEqual([FIRST]);
    latch.open();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(events()).toEqual([FIRST, REST]);
    expect(text).toContain('event: complete');
  });

  it("spends the parts' costs from the budget over a socket too (a deferred query over it is refused first)", async () => {
    // `{ products { name price } }` costs 10; deferred, its two parts cost 10 each: 20 > 15.
    const tight = await startGateway({
      CATALOG_URL: catalog.url,
      CONTENT_URL: content.url,
      SUPERGRAPH_PATH: supergraph.path,
      JWT_SECRET: TEST_JWT_SECRET,
      RATE_LIMIT_GRAPHQL_COST: '15',
    });
    const over = async (query: string, sub: string) => {
      const token = signAccessToken({ sub, name: sub, role: 'user' }, TEST_JWT_SECRET, 60);
      const client = createClient({
        url: `${tight.url.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${token}` },
        retryAttempts: 0,
      });
      try {
        const first = await client.iterate({ query }).next();
        return first.value;
      } catch (errors) {
        // A refusal at subscribe is graphql-ws's `error` message: its errors.
        return { errors } as Json;
      } finally {
        await client.dispose();
      }
    };
    try {
      // Two callers, two budgets: the whole query fits, the same query deferred does not.
      expect((await over('{ products { name price } }', '41')).data.products).toHaveLength(3);
      const refused = await over('{ products { name ... @defer { price } } }', '42');
      expect(refused.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    } finally {
      await tight.stop();
    }
  });
});
