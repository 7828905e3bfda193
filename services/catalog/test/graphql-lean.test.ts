import { request } from 'node:http';
import { AS, at, insertProducts, startTestCatalog, type TestCatalog } from './helpers';

/**
 * The kit's lean `/graphql` path (ADR 0015) against Apollo Server itself: two catalogs on
 * identical data, one with the lean path (the default) and one with GRAPHQL_LEAN=false, get the
 * same requests — the gateway's plain fetches and everything the lean path must leave alone — and
 * must answer each with the same status, headers and bytes.
 */

let lean: TestCatalog;
let apollo: TestCatalog;

const ROWS = [
  { name: 'Kettle', category: 'home', price: 3000, createdAt: at(5) },
  { name: 'Atlas', category: 'books', price: 1500, createdAt: at(1) },
  { name: 'Chess', category: 'games', price: 1999, createdAt: at(9) },
];

beforeAll(async () => {
  [lean, apollo] = await Promise.all([startTestCatalog(), startTestCatalog({ GRAPHQL_LEAN: 'false' })]);
  await insertProducts(lean.db, ROWS);
  await insertProducts(apollo.db, ROWS);
});

afterAll(async () => {
  await Promise.all([lean?.close(), apollo?.close()]);
});

interface Sent {
  method?: string;
  path?: string;
  /** Raw header pairs, repeated names allowed; `content-type: application/json` unless given. */
  headers?: [string, string][];
  body?: string | Buffer;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(base: string, sent: Sent, requestId: string): Promise<Answer> {
  const body = sent.body === undefined ? undefined : Buffer.from(sent.body);
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of sent.headers ?? [['content-type', 'application/json']]) {
    const had = headers[k];
    headers[k] = had === undefined ? v : [had, v].flat();
  }
  headers['x-request-id'] = requestId;
  if (body !== undefined) headers['content-length'] = String(body.length);
  const url = new URL(sent.path ?? '/graphql', base);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: sent.method ?? 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...rest } = res.headers;
        resolve({ status: res.statusCode!, headers: rest, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = (value: unknown) => JSON.stringify(value);
const op = (query: string, variables?: unknown, operationName?: string) => json({ query, variables, operationName });
const withAuth = (auth: Record<string, string>): [string, string][] => [
  ['content-type', 'application/json'],
  ['authorization', auth.authorization!],
];

const CASES: [string, () => Sent][] = [
  ['a page with meta (public, 60 s)', () => ({ body: op('{ products(limit: 2) { data { id name price } meta { total hasNext } } }') })],
  ['a product by variable', () => ({ body: op('query($id: ID!) { product(id: $id) { id name category price } }', { id: '1' }) })],
  ['an unknown product (NOT_FOUND)', () => ({ body: op('{ product(id: "999") { id name } }') })],
  ['not an id (BAD_USER_INPUT)', () => ({ body: op('{ product(id: "x") { id } }') })],
  [
    'a connection',
    () => ({ body: op('{ productConnection(first: 2) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }') }),
  ],
  [
    'entities as the gateway fetches them',
    () => ({
      body: op('query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Product { id name price } } }', {
        r: [
          { __typename: 'Product', id: '2' },
          { __typename: 'Product', id: '404' },
        ],
      }),
    }),
  ],
  ['__typename alone (no-store)', () => ({ body: op('{ __typename }') })],
  ['_service', () => ({ body: op('{ _service { sdl } }') })],
  ['a named operation of two', () => ({ body: op('query A { __typename } query B { product(id: "1") { name } }', undefined, 'B') })],
  ['two operations, no name', () => ({ body: op('query A { __typename } query B { __typename }') })],
  ['an unknown operation name', () => ({ body: op('query A { __typename }', undefined, 'Z') })],
  ['a syntax error', () => ({ body: op('{ products { ') })],
  ['an unknown field', () => ({ body: op('{ nope }') })],
  ['introspection', () => ({ body: op('{ __schema { queryType { name } } }') })],
  ['a variable of the wrong type', () => ({ body: op('query($id: ID!) { product(id: $id) { id } }', { id: { a: 1 } }) })],
  ['a missing variable', () => ({ body: op('query($id: ID!) { product(id: $id) { id } }') })],
  ['null variables and operationName', () => ({ body: json({ query: '{ __typename }', variables: null, operationName: null }) })],
  [
    'a mutation by an admin',
    () => ({
      headers: withAuth(AS.admin()),
      body: op('mutation { createProduct(input: { name: "Tmp", category: "tmp", price: 1.5 }) { id name price } }'),
    }),
  ],
  ['a mutation by a user (FORBIDDEN)', () => ({ headers: withAuth(AS.user()), body: op('mutation { deleteProduct(id: "1") }') })],
  ['a mutation by nobody (UNAUTHENTICATED)', () => ({ body: op('mutation { deleteProduct(id: "1") }') })],
  ['an invalid token (401)', () => ({ headers: withAuth(AS.badToken()), body: op('{ __typename }') })],
  ['a foreign token (401)', () => ({ headers: withAuth(AS.foreign()), body: op('{ product(id: "1") { id } }') })],
  [
    'a repeated Authorization header',
    () => ({ headers: [...withAuth(AS.admin()), ['authorization', AS.user().authorization]], body: op('{ __typename }') }),
  ],
  ['an empty body', () => ({ body: '' })],
  ['invalid JSON', () => ({ body: '{"query": ' })],
  ['a body that is not UTF-8', () => ({ body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) })],
  ['a byte order mark', () => ({ body: `\ufeff${op('{ __typename }')}` })],
  ['a JSON string', () => ({ body: '"{ __typename }"' })],
  ['a batch', () => ({ body: json([{ query: '{ __typename }' }]) })],
  ['a query that is not a string', () => ({ body: json({ query: 5 }) })],
  ['variables as a string', () => ({ body: json({ query: '{ __typename }', variables: '{}' }) })],
  ['empty extensions', () => ({ body: json({ query: '{ product(id: "1") { name } }', extensions: {} }) })],
  ['a persisted query', () => ({ body: json({ extensions: { persistedQuery: { version: 1, sha256Hash: 'ab'.repeat(32) } } }) })],
  ['another field in the body', () => ({ body: json({ query: '{ __typename }', id: 'x' }) })],
  [
    'Accept: application/graphql-response+json',
    () => ({
      headers: [
        ['content-type', 'application/json'],
        ['accept', 'application/graphql-response+json'],
      ],
      body: op('{ __typename }'),
    }),
  ],
  [
    'Accept: */*',
    () => ({
      headers: [
        ['content-type', 'application/json'],
        ['accept', '*/*'],
      ],
      body: op('{ product(id: "1") { name } }'),
    }),
  ],
  [
    'Accept: text/html',
    () => ({
      headers: [
        ['content-type', 'application/json'],
        ['accept', 'text/html'],
      ],
      body: op('{ __typename }'),
    }),
  ],
  ['charset=utf-8', () => ({ headers: [['content-type', 'application/json; charset=utf-8']], body: op('{ product(id: "2") { name } }') })],
  ['charset=latin1', () => ({ headers: [['content-type', 'application/json; charset=latin1']], body: op('{ __typename }') })],
  ['text/plain (CSRF prevention)', () => ({ headers: [['content-type', 'text/plain']], body: op('{ __typename }') })],
  ['no content type', () => ({ headers: [], body: op('{ __typename }') })],
  ['a query string', () => ({ path: '/graphql?x=1', body: op('{ __typename }') })],
  ['GET', () => ({ method: 'GET', path: '/graphql?query=%7B__typename%7D', headers: [] })],
  ['PUT', () => ({ method: 'PUT', body: op('{ __typename }') })],
  ['a body over the limit', () => ({ body: op(`{ __typename } # ${'x'.repeat(1024 * 1024)}`) })],
];

describe('the lean /graphql path answers as Apollo Server does', () => {
  it.each(CASES)('%s', async (name, make) => {
    const requestId = `lean-${name.replace(/[^a-z0-9]+/gi, '-')}`;
    // One request object for both sides: tokens are signed once.
    const sent = make();
    const [a, b] = [await send(lean.base, sent, requestId), await send(apollo.base, sent, requestId)];
    expect(a).toEqual(b);
    // An answer of the service, not of Node's HTTP parser.
    expect(a.headers['x-request-id'] ?? a.headers['content-type']).toBeDefined();
  });
});

async function leanCount(base: string, by: 'lean' | 'apollo'): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('halo_graphql_lean_requests_total{') && l.includes(`by="${by}"`));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function timedCount(base: string, route: string, status: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('halo_http_request_duration_seconds_count{') && l.includes(`route="${route}"`) && l.includes(`status="${status}"`),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('who answers', () => {
  it("the gateway's plain fetch is served by the lean path; a batch, a persisted query and a refused caller by Apollo", async () => {
    const before = { lean: await leanCount(lean.base, 'lean'), apollo: await leanCount(lean.base, 'apollo') };
    const answer = await send(lean.base, { body: op('{ product(id: "1") { name } }') }, 'who-1');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ data: { product: { name: 'Kettle' } } });
    expect(await leanCount(lean.base, 'lean')).toBe(before.lean + 1);
    await send(lean.base, { body: json([{ query: '{ __typename }' }]) }, 'who-2');
    await send(lean.base, { body: json({ extensions: { persistedQuery: { version: 1, sha256Hash: 'cd'.repeat(32) } } }) }, 'who-3');
    await send(lean.base, { headers: withAuth(AS.badToken()), body: op('{ __typename }') }, 'who-4');
    expect(await leanCount(lean.base, 'apollo')).toBe(before.apollo + 3);
    expect(await leanCount(lean.base, 'lean')).toBe(before.lean + 1);
  });

  it('a request is timed with the same route and status on either path (a refused body: unmatched)', async () => {
    for (const t of [lean, apollo]) {
      const ok = await timedCount(t.base, '/graphql', '200');
      const refused = await timedCount(t.base, 'unmatched', '400');
      await send(t.base, { body: op('{ product(id: "2") { name } }') }, 'timed-1');
      await send(t.base, { body: '{"query": ' }, 'timed-2');
      expect(await timedCount(t.base, '/graphql', '200')).toBe(ok + 1);
      expect(await timedCount(t.base, 'unmatched', '400')).toBe(refused + 1);
    }
  });

  it('with GRAPHQL_LEAN=false nothing is counted: Apollo answers everything through express', async () => {
    expect(await leanCount(apollo.base, 'lean')).toBeNaN();
  });
});
