import { createHash, randomBytes } from 'node:crypto';
import { Lexer, Source, TokenKind } from 'graphql';
import Redis from 'ioredis';
import { bearer, startE2ESystem } from './helpers';

/**
 * The GraphQL edge of the whole system (README "GraphQL at the edge"), through the gateway of real
 * processes on the real Postgres, with persisted queries in the real Redis and the default limits:
 * depth 7, cost 1000 (@cost/@listSize of the committed supergraph), 15 aliases, 1000 tokens,
 * batches of 10; @authenticated; Cache-Control; User.email privacy on every path; partial data
 * when a service is stopped.
 */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `halo:e2e-edge-${randomBytes(4).toString('hex')}:`;

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;

beforeAll(async () => {
  sys = await startE2ESystem({
    postgres: true,
    envFor: { gateway: { REDIS_URL, REDIS_KEY_PREFIX: PREFIX } },
    // The service stopped at the end must stay down while the test looks.
    restart: { initialDelayMs: 60_000 },
  });
  url = sys.url;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

type Body = any;

async function send(method: 'GET' | 'POST', payload: unknown, headers: Record<string, string> = {}) {
  let res: Response;
  if (method === 'GET') {
    const p = payload as { query?: string; variables?: unknown; extensions?: unknown };
    const qs = new URLSearchParams();
    if (p.query !== undefined) qs.set('query', p.query);
    if (p.variables !== undefined) qs.set('variables', JSON.stringify(p.variables));
    if (p.extensions !== undefined) qs.set('extensions', JSON.stringify(p.extensions));
    res = await fetch(`${url}/graphql?${qs.toString()}`, { headers });
  } else {
    res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(payload),
    });
  }
  return { status: res.status, cacheControl: res.headers.get('cache-control'), body: (await res.json()) as Body };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const ADMIN = bearer('1', 'Admin', 'admin');

const tokensOf = (query: string) => {
  const lexer = new Lexer(new Source(query));
  let n = 0;
  while (lexer.advance().kind !== TokenKind.EOF) n++;
  return n;
};
/**
 * A valid query of exactly `n` tokens: fragments, so that validation's overlapping-fields check
 * (which has its own work budget in graphql-js) is not what refuses it.
 */
function tokensQuery(n: number): string {
  const base = tokensOf('{ product(id: "1") { } }');
  const perFragment = tokensOf('...F0 fragment F0 on Product { id }');
  const fragments = Math.floor((n - base) / perFragment);
  const spreads = Array.from({ length: fragments }, (_, i) => `...F${i}`).join(' ');
  const defs = Array.from({ length: fragments }, (_, i) => `fragment F${i} on Product { id }`).join(' ');
  const query = `{ product(id: "1") { ${'id '.repeat(n - base - fragments * perFragment)}${spreads} } } ${defs}`;
  expect(tokensOf(query)).toBe(n);
  return query;
}
const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `p${i}: product(id: "1") { id }`).join(' ')} }`;

/** The default limits, each exactly at and one over, on the committed supergraph. */
const LIMITS = [
  {
    limit: 'depth 7',
    // posts → edges → node → comments → post → author → id
    at: '{ posts(first: 1) { edges { node { comments { post { author { id } } } } } } }',
    over: '{ posts(first: 1) { edges { node { comments { post { author { posts { id } } } } } } } }',
    refused: { code: 'MAX_DEPTH_LIMIT', depth: 8, maxDepth: 7 },
  },
  {
    // products: @cost(weight: 2) plus `limit` products (its @listSize slicing argument).
    limit: 'cost 1000',
    at: '{ products(limit: 998) { data { id } } }',
    over: '{ products(limit: 999) { data { id } } }',
    refused: { code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost: 1001, maxCost: 1000 },
  },
  { limit: '15 aliases', at: aliases(15), over: aliases(16), refused: { code: 'MAX_ALIASES_LIMIT', maxAliases: 15 } },
  { limit: '1000 tokens', at: tokensQuery(1000), over: tokensQuery(1001), refused: { code: 'GRAPHQL_PARSE_FAILED' } },
];

let unique = 0;
async function over(transport: 'POST' | 'GET' | 'batch' | 'APQ', rawQuery: string) {
  const query = `${rawQuery}\n# ${++unique}`;
  if (transport === 'POST' || transport === 'GET') return send(transport, { query });
  if (transport === 'batch') {
    const r = await send('POST', [{ query }, { query: '{ product(id: "1") { id } }' }]);
    expect(r.body[1]).toEqual({ data: { product: { id: '1' } } });
    return { ...r, body: r.body[0] };
  }
  const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
  expect((await send('GET', { extensions })).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  const registered = await send('POST', { query, extensions });
  const replayed = await send('GET', { extensions });
  if (registered.status === 200) expect(replayed.body).toEqual(registered.body);
  else expect(replayed.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  return registered;
}

describe.each(['POST', 'GET', 'batch', 'APQ'] as const)('default limits over %s', (transport) => {
  it.each(LIMITS)('$limit: exactly at it runs; one over → 400 with the measure and the limit', async ({ at, over: tooMuch, refused }) => {
    const ok = await over(transport, at);
    expect(ok.body.errors).toBeUndefined();
    expect(ok.status).toBe(200);
    const no = await over(transport, tooMuch);
    expect(no.status).toBe(400);
    expect(no.cacheControl).toBe('no-store');
    expect(no.body.errors[0].extensions).toEqual(refused);
  });
});

describe('batching', () => {
  it('10 operations answer in order; 11 → 400 BATCH_LIMIT_EXCEEDED', async () => {
    const ops = Array.from({ length: 10 }, (_, i) => ({ query: `{ product(id: "${(i % 3) + 1}") { id } }` }));
    const ok = await send('POST', ops);
    expect(ok.status).toBe(200);
    expect(ok.body.map((r: Body) => r.data.product.id)).toEqual(ops.map((_, i) => String((i % 3) + 1)));
    const refused = await send('POST', [...ops, ops[0]]);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions).toEqual({ code: 'BATCH_LIMIT_EXCEEDED', batchSize: 11, maxBatch: 10 });
  });
});

describe('@authenticated and credentials', () => {
  it('an anonymous operation touching an @authenticated field → 401 before execution; any invalid token → 401', async () => {
    for (const query of [
      '{ me { id } }',
      '{ users { id orders { id } } }',
      'mutation { createOrder(productId: "1", clientOrderId: "x") { id } }',
    ]) {
      const r = await send('POST', { query });
      expect(r.status).toBe(401);
      expect(r.cacheControl).toBe('no-store');
      expect(r.body.errors[0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
    }
    const invalid = await send('GET', { query: '{ products { data { id } } }' }, { authorization: 'Bearer nope' });
    expect([invalid.status, invalid.cacheControl, invalid.body.errors[0].message]).toEqual([401, 'no-store', 'Invalid token']);
  });

  it('a mutation over GET → 405', async () => {
    const r = await send('GET', { query: 'mutation { createUser(name: "X", email: "x@example.com") { id } }' }, ADMIN);
    expect(r.status).toBe(405);
  });
});

describe('Cache-Control', () => {
  it('public data: the hints’ max-age, public; authenticated: private; unhinted: no-store', async () => {
    const q = { query: '{ products { data { id name } } }' };
    expect((await send('GET', q)).cacheControl).toBe('max-age=60, public');
    expect((await send('GET', q, ADMIN)).cacheControl).toBe('max-age=60, private');
    expect((await send('POST', { query: '{ users { id } }' })).cacheControl).toBe('no-store');
  });

  it('REST errors carry it too', async () => {
    for (const [path, headers, status] of [
      ['/profile', {}, 401],
      ['/profile', { authorization: 'Bearer nope' }, 401],
      ['/nowhere', {}, 404],
      ['/posts/999999', {}, 404],
    ] as const) {
      const res = await fetch(`${url}${path}`, { headers });
      expect([path, res.status, res.headers.get('cache-control')]).toEqual([path, status, 'no-store']);
    }
  });
});

describe('User.email privacy through the gateway', () => {
  const emails = async (headers: Record<string, string>) => {
    const { body } = await send('POST', { query: '{ users { id email } }' }, headers);
    return new Map((body.data.users as { id: string; email: string }[]).map((u) => [u.id, u.email]));
  };

  it('anonymous: "" for everyone; a user: their own only; an admin: everyone’s', async () => {
    const all = await emails(ADMIN);
    expect([...all.values()]).toEqual(expect.arrayContaining(['admin@halo.local', 'alice@halo.local', 'bob@halo.local']));
    expect([...(await emails({})).values()].every((e) => e === '')).toBe(true);
    const alice = [...all].find(([, e]) => e === 'alice@halo.local')![0];
    const asAlice = await emails(bearer(alice, 'Alice', 'user'));
    for (const [id, email] of asAlice) expect(email).toBe(id === alice ? 'alice@halo.local' : '');
  });

  it('nested authors, `user(id)` and `me` (an entity from another subgraph) follow the same rule', async () => {
    const nested = await send('POST', {
      query: '{ posts(first: 5) { edges { node { author { email } comments { author { email } } } } } }',
    });
    expect(JSON.stringify(nested.body.data)).not.toMatch(/@/);
    const all = await emails(ADMIN);
    const bob = [...all].find(([, e]) => e === 'bob@halo.local')![0];
    const one = await send('POST', { query: `{ user(id: "${bob}") { email } }` });
    expect(one.body.data.user.email).toBe('');
    const me = await send('POST', { query: '{ me { email } }' }, bearer(bob, 'Bob', 'user'));
    expect(me.body.data).toEqual({ me: { email: 'bob@halo.local' } });
  });

  it('REST embeds never carry an email', async () => {
    const { body } = await send('POST', { query: '{ posts(first: 1) { edges { node { id } } } }' });
    const id = body.data.posts.edges[0].node.id;
    const res = await fetch(`${url}/posts/${id}`);
    const { data } = (await res.json()) as { data: { author: Record<string, unknown>; comments: Record<string, unknown>[] } };
    expect(Object.keys(data.author).sort()).toEqual(['avatar', 'id', 'name']);
    expect(JSON.stringify(data)).not.toMatch(/@/);
  });
});

describe('persisted queries in Redis', () => {
  it('the three steps, with the registration kept under the gateway’s prefix', async () => {
    const query = `{ product(id: "2") { id name } } # ${randomBytes(4).toString('hex')}`;
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
    expect((await send('GET', { extensions })).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await send('POST', { query, extensions });
    expect(registered.body.data.product.id).toBe('2');
    const hit = await send('GET', { extensions });
    expect(hit.body).toEqual(registered.body);
    expect(hit.cacheControl).toBe('max-age=60, public');
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.get(`${PREFIX}apq:${sha256(query)}`)).toBe(query);
    } finally {
      redis.disconnect();
    }
  });
});

describe('a stopped service', () => {
  it('yields partial data and an error for its fields, not a failed request', async () => {
    const catalog = sys.system.processes.find((p) => p.name === 'catalog')!;
    catalog.child.kill('SIGKILL');
    await new Promise<void>((r) =>
      catalog.child.exitCode !== null || catalog.child.signalCode !== null ? r() : catalog.child.once('exit', () => r()),
    );
    const { status, body } = await send('POST', { query: '{ users { id } product(id: "1") { id name } }' });
    expect(status).toBe(200);
    expect(body.data.users.length).toBeGreaterThan(0);
    expect(body.data.product).toBeNull();
    expect(body.errors[0]).toMatchObject({ message: 'Service unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } });
  });
});
