import { createServer, type IncomingHttpHeaders } from 'node:http';
import { serviceIdentityFor, signAccessToken } from '@halo/kit/auth';
import { createLogger, runInRequest } from '@halo/kit/logging';
import { listen } from '@halo/kit/process';
import { TEST_JWT_SECRET, testIdentityEnv } from '@halo/kit/testing';
import { createCallerResolver } from '../src/auth';
import { graphqlLimits, loadGatewayConfig } from '../src/config';
import { dedupingFetcher } from '../src/graphql/dedupe';
import { createGraphQL, type GraphQLHandler } from '../src/graphql/engine';
import { closeServer, composeSupergraph, fileSource, startSubgraph, tempSupergraph, until, type TestSubgraph } from './helpers';

/**
 * In-flight deduplication (issue 12): a subgraph fetch identical to one in flight — same
 * subgraph, document, variables and credentials — waits for that one's answer. Real subgraphs
 * count what reaches them; the shared fetch is held by a latch in the subgraph until the gateway
 * reports every other request waiting on it, so "fewer requests than callers" is deterministic.
 * The gateway here is createGraphQL behind node:http (as app.ts serves it), so a test can read
 * its counters and build one with deduplication off.
 */

// content serves posts (the root fetch, distinct per request through `tag`); catalog resolves
// their authors by entity fetch, which is the same for every request: the one that shares.
const CONTENT = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Post @key(fields: "id") { id: ID! tag: String! author: User! }
  type User @key(fields: "id", resolvable: false) { id: ID! }
  type Query { posts(tag: String!): [Post!]! }
  type Mutation { bump(id: ID!): Int }
`;
const CATALOG = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type User @key(fields: "id") { id: ID! name: String! seenBy: String! }
  type Query { fails: String slow: String }
`;

/** Holds answers until `open()`; reset with `close()`. */
class Latch {
  private waiters: (() => void)[] = [];
  private opened = false;
  wait(): Promise<void> {
    return this.opened ? Promise.resolve() : new Promise((r) => this.waiters.push(r));
  }
  open() {
    this.opened = true;
    for (const go of this.waiters.splice(0)) go();
  }
  close() {
    this.opened = false;
  }
}

const latch = new Latch();
let bumps = 0;
/** Answers once `n` bump calls are in the subgraph at the same time (or after 2 s). */
let bumpBarrier: { n: number; waiting: (() => void)[] } = { n: 0, waiting: [] };

const tokenOf = (headers: IncomingHttpHeaders) => headers.authorization?.replace(/^Bearer /, '') ?? 'anonymous';

let content: TestSubgraph;
let catalog: TestSubgraph;
let supergraph: ReturnType<typeof tempSupergraph>;

interface RunningGraphQL {
  graphql: GraphQLHandler;
  url: string;
  stop(): Promise<void>;
}
let on: RunningGraphQL;
let off: RunningGraphQL;

async function startGraphQL(dedupeInflight: boolean): Promise<RunningGraphQL> {
  const config = loadGatewayConfig({
    ...testIdentityEnv('gateway'),
    CONTENT_URL: content.url,
    CATALOG_URL: catalog.url,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
  });
  const logger = createLogger('gateway', 'silent');
  const callers = createCallerResolver({
    identity: serviceIdentityFor('gateway', config),
    jwtSecret: config.JWT_SECRET,
    authGrpcAddr: config.AUTH_GRPC_ADDR,
    deadlineMs: config.GRPC_DEADLINE_MS,
  });
  const graphql = createGraphQL({
    callers,
    ...fileSource(config, logger),
    bodyLimit: config.BODY_LIMIT,
    logger,
    limits: graphqlLimits(config),
    persistedQueries: { ttlSeconds: config.GRAPHQL_APQ_TTL_S },
    queryPlanCacheMiB: config.GRAPHQL_QUERY_PLAN_CACHE_MIB,
    dedupeInflight,
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

beforeAll(async () => {
  content = await startSubgraph(CONTENT, {
    Query: {
      posts: (_: unknown, { tag }: { tag: string }) => [1, 2].map((i) => ({ id: `${tag}-${i}`, tag, author: { id: String(i) } })),
    },
    Post: { __resolveReference: (ref: { id: string }) => ref },
    Mutation: {
      bump: async () => {
        bumps++;
        const barrier = bumpBarrier;
        if (barrier.waiting.length + 1 >= barrier.n) for (const go of barrier.waiting.splice(0)) go();
        else
          await new Promise<void>((r) => {
            const timer = setTimeout(r, 2_000);
            barrier.waiting.push(() => (clearTimeout(timer), r()));
          });
        return bumps;
      },
    },
  });
  catalog = await startSubgraph(CATALOG, {
    User: {
      __resolveReference: async (ref: { id: string }, ctx: { headers: IncomingHttpHeaders }) => {
        await latch.wait();
        return { id: ref.id, name: `user ${ref.id}`, seenBy: tokenOf(ctx.headers) };
      },
    },
    Query: {
      fails: async () => {
        await latch.wait();
        throw new Error('catalog says no');
      },
      slow: async () => {
        await latch.wait();
        return 'slow';
      },
    },
  });
  supergraph = tempSupergraph(
    composeSupergraph([
      { name: 'content', sdl: CONTENT, url: 'http://127.0.0.1:1/graphql' },
      { name: 'catalog', sdl: CATALOG, url: 'http://127.0.0.1:1/graphql' },
    ]),
  );
  on = await startGraphQL(true);
  off = await startGraphQL(false);
});

afterEach(() => latch.open());

afterAll(async () => {
  await on?.stop();
  await off?.stop();
  await content?.stop();
  await catalog?.stop();
  supergraph?.remove();
});

type Body = any;

async function post(url: string, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Body> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return res.json();
}

const POSTS = 'query Posts($tag: String!) { posts(tag: $tag) { id author { name seenBy } } }';
/** A valid token for user `sub` (a numeric id). */
const bearer = (sub: string) => ({ authorization: `Bearer ${signAccessToken({ sub, name: sub, role: 'user' }, TEST_JWT_SECRET, 60)}` });
const N = 8;

/** Sends `n` requests, waits until the gateway holds `sharing` of them on another's fetch, then releases the subgraph. */
async function concurrently<T>(n: number, send: (i: number) => Promise<T>, sharing: number, gw = on): Promise<T[]> {
  latch.close();
  const answers = Promise.all(Array.from({ length: n }, (_x, i) => send(i)));
  try {
    await until(() => gw.graphql.dedupe!.waiting() >= sharing);
  } finally {
    latch.open();
  }
  return answers;
}

describe('in-flight deduplication of subgraph fetches', () => {
  it('N identical anonymous entity fetches in flight reach the subgraph once; every caller gets the answer', async () => {
    const before = { content: content.calls(), catalog: catalog.calls(), shared: on.graphql.dedupe!.shared() };
    // Distinct root fetches (tag) whose entity fetches (the authors) are identical.
    const answers = await concurrently(N, (i) => post(on.url, POSTS, { tag: `t${i}` }), N - 1);
    expect(content.calls() - before.content).toBe(N);
    expect(catalog.calls() - before.catalog).toBe(1);
    expect(on.graphql.dedupe!.shared() - before.shared).toBe(N - 1);
    answers.forEach((body, i) => {
      expect(body.errors).toBeUndefined();
      expect(body.data.posts).toEqual([
        { id: `t${i}-1`, author: { name: 'user 1', seenBy: 'anonymous' } },
        { id: `t${i}-2`, author: { name: 'user 2', seenBy: 'anonymous' } },
      ]);
    });
  });

  it('never across callers: two tokens → one fetch each, and each caller sees data computed for its own token', async () => {
    const alice = bearer('11');
    const bob = bearer('12');
    const before = catalog.calls();
    const callers = Array.from({ length: N }, (_x, i) => (i % 2 === 0 ? alice : bob));
    // Two fetches in flight (one per token); everyone else waits on the one with their token.
    const answers = await concurrently(N, (i) => post(on.url, POSTS, { tag: `c${i}` }, callers[i]), N - 2);
    expect(catalog.calls() - before).toBe(2);
    answers.forEach((body, i) => {
      expect(body.errors).toBeUndefined();
      const seenBy = callers[i]!.authorization.replace('Bearer ', '');
      expect(body.data.posts.map((p: Body) => p.author.seenBy)).toEqual([seenBy, seenBy]);
    });
  });

  it('an anonymous caller never shares with an authenticated one', async () => {
    const before = catalog.calls();
    latch.close();
    const answers = Promise.all([post(on.url, POSTS, { tag: 'a0' }, bearer('13')), post(on.url, POSTS, { tag: 'a1' })]);
    // Both fetches reach the subgraph while it holds them: neither waited on the other.
    try {
      await until(() => catalog.calls() - before >= 2, 5_000);
    } finally {
      latch.open();
    }
    const [authenticated, anonymous] = await answers;
    expect(catalog.calls() - before).toBe(2);
    expect(authenticated.data.posts[0].author.seenBy).not.toBe('anonymous');
    expect(anonymous.data.posts[0].author.seenBy).toBe('anonymous');
  });

  it('a mutation is never shared: every identical one reaches the subgraph', async () => {
    const before = content.calls();
    bumps = 0;
    bumpBarrier = { n: N, waiting: [] };
    const answers = await Promise.all(Array.from({ length: N }, () => post(on.url, 'mutation { bump(id: "1") }')));
    expect(content.calls() - before).toBe(N);
    expect(bumps).toBe(N);
    expect(answers.map((a) => a.errors)).toEqual(Array(N).fill(undefined));
  });

  it('switched off (GRAPHQL_DEDUPE_INFLIGHT=false): every request reaches the subgraph', async () => {
    expect(off.graphql.dedupe).toBeNull();
    const before = catalog.calls();
    latch.close();
    const answers = Promise.all(Array.from({ length: N }, (_x, i) => post(off.url, POSTS, { tag: `o${i}` })));
    await until(() => catalog.calls() - before >= N);
    latch.open();
    for (const body of await answers) expect(body.data.posts[0].author.name).toBe('user 1');
    expect(catalog.calls() - before).toBe(N);
  });

  it('an error answer from the subgraph reaches every waiter', async () => {
    const before = catalog.calls();
    const answers = await concurrently(N, () => post(on.url, '{ fails }'), N - 1);
    expect(catalog.calls() - before).toBe(1);
    for (const body of answers) {
      expect(body.data).toEqual({ fails: null });
      expect(body.errors).toEqual([expect.objectContaining({ message: 'catalog says no', path: ['fails'] })]);
    }
  });

  it('once answered, the next identical fetch goes out again (nothing is cached)', async () => {
    const before = catalog.calls();
    expect((await post(on.url, '{ slow }')).data.slow).toBe('slow');
    expect((await post(on.url, '{ slow }')).data.slow).toBe('slow');
    expect(catalog.calls() - before).toBe(2);
    expect(on.graphql.dedupe!.inFlight()).toBe(0);
  });
});

describe('dedupingFetcher', () => {
  function fakeUpstream() {
    const calls: { url: string; headers: Record<string, string> }[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const fetcher = async (url: string, init?: { headers?: Record<string, string>; body?: string | Buffer }) => {
      calls.push({ url, headers: init?.headers ?? {} });
      await gate;
      return new Response(JSON.stringify({ data: { n: calls.length } }), {
        status: 200,
        headers: { 'content-type': 'application/json', 'cache-control': 'max-age=5, public' },
      }) as never;
    };
    return { calls, release: () => release(), fetcher };
  }
  const init = (headers: Record<string, string>, body = '{"query":"{ n }"}') => ({ method: 'POST', headers, body });

  it('shares by URL, body and every header but the request id; each waiter parses its own object', async () => {
    const up = fakeUpstream();
    const { fetcher, waiting } = dedupingFetcher(up.fetcher);
    const pending = [
      fetcher('http://a/graphql', init({ 'x-request-id': '1' })),
      fetcher('http://a/graphql', init({ 'x-request-id': '2' })),
      fetcher('http://a/graphql', init({ authorization: 'Bearer x', 'x-request-id': '3' })),
      fetcher('http://a/graphql', init({}, '{"query":"{ n }","variables":{"a":1}}')),
      fetcher('http://b/graphql', init({})),
    ];
    expect(waiting()).toBe(1);
    up.release();
    const responses = await Promise.all(pending);
    expect(up.calls.map((c) => c.url)).toEqual(['http://a/graphql', 'http://a/graphql', 'http://a/graphql', 'http://b/graphql']);
    const [first, second] = await Promise.all([responses[0]!.json(), responses[1]!.json()]);
    expect(first).toEqual(second);
    expect(first).not.toBe(second);
    expect(responses[1]!.headers.get('cache-control')).toBe('max-age=5, public');
    expect(responses[1]!.bodyUsed).toBe(true);
    await expect(responses[1]!.text()).rejects.toThrow(TypeError);
    expect(waiting()).toBe(0);
  });

  it('a failed fetch fails for every waiter, and the next one is sent afresh', async () => {
    let calls = 0;
    const { fetcher, inFlight } = dedupingFetcher(async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 10));
      throw new TypeError('fetch failed');
    });
    const results = await Promise.allSettled([fetcher('http://a', init({})), fetcher('http://a', init({}))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toBe(1);
    expect(inFlight()).toBe(0);
    await expect(fetcher('http://a', init({}))).rejects.toThrow('fetch failed');
    expect(calls).toBe(2);
  });
});
