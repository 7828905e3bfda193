import { writeFileSync } from 'node:fs';
import { Lexer, Source, TokenKind, getIntrospectionQuery } from 'graphql';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { sha256 } from '../src/graphql/persisted';
import { composeSupergraph, startGateway, startSubgraph, tempSupergraph, type RunningGateway, type TestSubgraph } from './helpers';

/**
 * The GraphQL edge (README "GraphQL at the edge"): every limit on every transport — POST, GET,
 * one operation of a batch, a persisted query — exactly at the limit and one over, always refused
 * before any subgraph is called; persisted queries; batching; errors and Cache-Control. Real
 * subgraphs (@apollo/server) behind an in-process gateway whose limits are set small on purpose.
 */

const SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@cost", "@listSize", "@authenticated"])
  type Item @key(fields: "id") { id: ID! name: String! next: Item }
  type Query {
    item(id: ID!): Item
    items(first: Int): [Item!]! @listSize(slicingArguments: ["first"], requireOneSlicingArgument: false)
    "Answers once n calls are in flight at the same time (or after 2 s): tag and how many were."
    together(n: Int!, tag: String!): String
    secret: String @authenticated
  }
  type Mutation { touch(id: ID!): Item }
`;

const LIMITS = {
  GRAPHQL_MAX_DEPTH: '4',
  GRAPHQL_MAX_COST: '50',
  GRAPHQL_MAX_ALIASES: '3',
  GRAPHQL_MAX_TOKENS: '200',
  GRAPHQL_MAX_BATCH: '3',
};

let inFlight = 0;
let peak = 0;
const waiting: (() => void)[] = [];
const item = (id: string) => ({ id, name: `item ${id}`, next: null });
const resolvers = {
  Query: {
    item: (_: unknown, { id }: { id: string }) => ({ ...item(id), next: item(`${id}.next`) }),
    items: (_: unknown, { first }: { first?: number }) => Array.from({ length: Math.min(first ?? 10, 3) }, (_x, i) => item(String(i))),
    together: async (_: unknown, { n, tag }: { n: number; tag: string }) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      if (inFlight >= n) for (const go of waiting.splice(0)) go();
      else {
        await new Promise<void>((r) => {
          const timer = setTimeout(r, 2_000);
          waiting.push(() => {
            clearTimeout(timer);
            r();
          });
        });
      }
      inFlight--;
      return `${tag}:${peak}`;
    },
    secret: () => 's3cret',
  },
  Item: { next: (i: { id: string }) => item(`${i.id}.next`) },
  Mutation: { touch: (_: unknown, { id }: { id: string }) => item(id) },
};

let subgraph: TestSubgraph;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  subgraph = await startSubgraph(SDL, resolvers);
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({
    CONTENT_URL: subgraph.url,
    SUPERGRAPH_PATH: supergraph.path,
    JWT_SECRET: TEST_JWT_SECRET,
    GRAPHQL_INTROSPECTION: 'true',
    ...LIMITS,
  });
});

afterAll(async () => {
  await gw?.stop();
  await subgraph?.stop();
  supergraph?.remove();
});

async function send(method: 'GET' | 'POST', payload: unknown, headers: Record<string, string> = {}, url = gw.url) {
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
      body: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });
  }
  const text = await res.text();
  return { status: res.status, cacheControl: res.headers.get('cache-control'), body: JSON.parse(text) };
}

const tokensOf = (query: string) => {
  const lexer = new Lexer(new Source(query));
  let n = 0;
  while (lexer.advance().kind !== TokenKind.EOF) n++;
  return n;
};
/** A valid query of exactly `n` tokens. */
const tokensQuery = (n: number) => `{ item(id: "1") { ${'id '.repeat(n - tokensOf('{ item(id: "1") { } }'))}} }`;
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });

/** Each limit: a query exactly at it and one just over, the code refused with, and what is measured. */
const LIMIT_CASES = [
  {
    limit: 'depth',
    at: '{ item(id: "1") { next { next { id } } } }',
    over: '{ item(id: "1") { next { next { next { id } } } } }',
    refused: { code: 'MAX_DEPTH_LIMIT', depth: 5, maxDepth: 4 },
  },
  {
    limit: 'cost',
    at: '{ items(first: 50) { id } }',
    over: '{ items(first: 51) { id } }',
    refused: { code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost: 51, maxCost: 50 },
  },
  {
    limit: 'cost (from a variable)',
    at: 'query Sized($n: Int = 50) { items(first: $n) { id } }',
    over: 'query Sized($n: Int = 51) { items(first: $n) { id } }',
    refused: { code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost: 51, maxCost: 50 },
  },
  {
    limit: 'aliases',
    at: '{ a: item(id: "1") { id } b: item(id: "2") { id } c: item(id: "3") { id } }',
    over: '{ a: item(id: "1") { id } b: item(id: "2") { id } c: item(id: "3") { id } d: item(id: "4") { id } }',
    refused: { code: 'MAX_ALIASES_LIMIT', maxAliases: 3 },
  },
  { limit: 'tokens', at: tokensQuery(200), over: tokensQuery(201), refused: { code: 'GRAPHQL_PARSE_FAILED' } },
];

const TRANSPORTS = ['POST', 'GET', 'batch', 'APQ'] as const;
let unique = 0;

/**
 * Runs `query` over a transport and returns the answer for that operation. A batch carries a
 * second, harmless operation that must succeed either way. APQ first sends the hash alone
 * (unknown), then hash and query, then the hash alone again over GET (as a CDN would see it).
 */
async function over(transport: (typeof TRANSPORTS)[number], rawQuery: string) {
  // A comment (which is not a token) makes the text, hence the persisted-query hash, new.
  const query = `${rawQuery}\n# ${++unique}`;
  if (transport === 'POST' || transport === 'GET') return send(transport, { query });
  if (transport === 'batch') {
    const r = await send('POST', [{ query }, { query: '{ item(id: "9") { name } }' }]);
    expect(r.body[1]).toEqual({ data: { item: { name: 'item 9' } } });
    return { ...r, body: r.body[0] };
  }
  const extensions = persisted(query);
  const unknown = await send('GET', { extensions });
  expect([unknown.status, unknown.body.errors[0].extensions.code]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
  const registered = await send('POST', { query, extensions });
  const replayed = await send('GET', { extensions });
  if (registered.status === 200) {
    expect(replayed).toEqual(registered);
  } else {
    // Refused operations are never registered.
    expect(replayed.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  }
  return registered;
}

describe.each(TRANSPORTS)('limits over %s', (transport) => {
  it.each(LIMIT_CASES)('$limit: exactly at the limit runs', async ({ at }) => {
    const before = subgraph.calls();
    const { status, body } = await over(transport, at);
    expect(body.errors).toBeUndefined();
    expect(status).toBe(200);
    expect(body.data).toBeTruthy();
    expect(subgraph.calls()).toBeGreaterThan(before);
  });

  it.each(LIMIT_CASES)(
    '$limit: one over → HTTP 400 with the code, the measure and the limit, no subgraph called',
    async ({ over: query, refused }) => {
      const before = subgraph.calls();
      const { status, body, cacheControl } = await over(transport, query);
      expect(status).toBe(400);
      expect(body.data).toBeUndefined();
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0].extensions).toEqual(refused);
      expect(cacheControl).toBe('no-store');
      // In a batch, only the harmless operation reached the subgraph.
      expect(subgraph.calls()).toBe(before + (transport === 'batch' ? 1 : 0));
    },
  );
});

describe('hostile documents', () => {
  it('an alias bomb is refused by the alias cap', async () => {
    const fields = Array.from({ length: 40 }, (_, i) => `a${i}: item(id: "${i}") { id }`).join(' ');
    const before = subgraph.calls();
    const { status, body } = await send('POST', { query: `{ ${fields} }` }, {});
    expect(status).toBe(400);
    // A 40-alias document is also past 200 tokens: whichever cap comes first refuses it.
    expect(['GRAPHQL_PARSE_FAILED', 'MAX_ALIASES_LIMIT']).toContain(body.errors[0].extensions.code);
    // Aliases of __typename are free: only the four aliased items count.
    const small = Array.from({ length: 4 }, (_, i) => `t${i}: __typename b${i}: item(id: "1") { id }`).join(' ');
    const aliases = await send('POST', { query: `{ ${small} }` });
    expect(aliases.status).toBe(400);
    expect(aliases.body.errors[0]).toMatchObject({
      message: 'Aliases limit of 3 exceeded, found 4.',
      extensions: { code: 'MAX_ALIASES_LIMIT', maxAliases: 3 },
    });
    expect(subgraph.calls()).toBe(before);
  });

  it('a fragment cycle is refused by validation, at once', async () => {
    const before = subgraph.calls();
    const { status, body } = await send('POST', {
      query: '{ item(id: "1") { ...A } } fragment A on Item { next { ...B } } fragment B on Item { next { ...A } }',
    });
    expect(status).toBe(400);
    expect(body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(subgraph.calls()).toBe(before);
  });

  it('fragments that double at every level are priced as what they expand to', async () => {
    const levels = 12;
    const fragments = Array.from({ length: levels }, (_, i) =>
      i === 0 ? 'fragment F0 on Item { next { id } }' : `fragment F${i} on Item { ...F${i - 1} ...F${i - 1} }`,
    ).join(' ');
    const before = subgraph.calls();
    const { status, body } = await send('POST', { query: `{ item(id: "1") { ...F${levels - 1} } } ${fragments}` });
    expect(status).toBe(400);
    expect(body.errors[0].extensions).toEqual({ code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost: 1 + 2 ** (levels - 1), maxCost: 50 });
    expect(subgraph.calls()).toBe(before);
  });

  it('introspection passes the depth and cost limits; an introspection depth bomb does not', async () => {
    const full = await send('POST', { query: getIntrospectionQuery() });
    expect(full.status).toBe(200);
    expect(full.body.data.__schema.queryType).toMatchObject({ name: 'Query' });
    const bomb = await send('POST', {
      query: '{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }',
    });
    expect(bomb.status).toBe(400);
    expect(bomb.body.errors[0].message).toMatch(/Maximum introspection depth exceeded/);
  });
});

describe('automatic persisted queries', () => {
  it('the three steps: unknown hash, hash and query (registered), hash alone (over POST)', async () => {
    const query = '{ item(id: "apq") { name } }';
    const extensions = persisted(query);
    const first = await send('POST', { extensions });
    expect(first.status).toBe(200);
    expect(first.body.errors[0]).toMatchObject({ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } });
    expect(first.cacheControl).toBe('no-store');
    const second = await send('POST', { query, extensions });
    expect(second.body).toEqual({ data: { item: { name: 'item apq' } } });
    const third = await send('POST', { extensions });
    expect(third.body).toEqual({ data: { item: { name: 'item apq' } } });
  });

  it('a hash that does not match its query → 400, nothing registered', async () => {
    const r = await send('POST', { query: '{ item(id: "x") { id } }', extensions: persisted('{ something else }') });
    expect(r.status).toBe(400);
    expect(r.body.errors[0].message).toBe('provided sha does not match query');
    expect(r.cacheControl).toBe('no-store');
    const later = await send('POST', { extensions: persisted('{ something else }') });
    expect(later.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('a persisted operation is held to @authenticated like any other', async () => {
    const query = '{ secret }';
    const bearer = { authorization: `Bearer ${signAccessToken({ sub: '2', name: 'A', role: 'user' }, TEST_JWT_SECRET, 60)}` };
    expect((await send('POST', { query, extensions: persisted(query) }, bearer)).body).toEqual({ data: { secret: 's3cret' } });
    const anonymous = await send('GET', { extensions: persisted(query) });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors[0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
  });
});

describe('batching', () => {
  it('answers in order, runs the operations at the same time', async () => {
    peak = 0;
    const tags = ['a', 'b', 'c'];
    const { status, body } = await send(
      'POST',
      tags.map((tag) => ({ query: `{ together(n: 3, tag: "${tag}") }` })),
    );
    expect(status).toBe(200);
    expect(body).toEqual(tags.map((tag) => ({ data: { together: `${tag}:3` } })));
  });

  it('exactly GRAPHQL_MAX_BATCH operations run; one more → 400 BATCH_LIMIT_EXCEEDED, nothing runs', async () => {
    const op = { query: '{ item(id: "b") { id } }' };
    const ok = await send('POST', [op, op, op]);
    expect(ok.status).toBe(200);
    expect(ok.body).toHaveLength(3);
    const before = subgraph.calls();
    const refused = await send('POST', [op, op, op, op]);
    expect(refused.status).toBe(400);
    expect(refused.cacheControl).toBe('no-store');
    expect(refused.body).toEqual({
      errors: [
        {
          message: 'A batch of 4 operations exceeds the limit of 3',
          extensions: { code: 'BATCH_LIMIT_EXCEEDED', batchSize: 4, maxBatch: 3 },
        },
      ],
    });
    expect(subgraph.calls()).toBe(before);
  });

  it('an empty batch is a 400', async () => {
    const { status, cacheControl } = await send('POST', []);
    expect([status, cacheControl]).toEqual([400, 'no-store']);
  });
});

describe('GET', () => {
  it('serves queries with variables without any preflight header; a mutation → 405', async () => {
    const q = await send('GET', { query: 'query ($id: ID!) { item(id: $id) { name } }', variables: { id: 'g' } });
    expect(q).toMatchObject({ status: 200, body: { data: { item: { name: 'item g' } } } });
    const m = await send('GET', { query: 'mutation { touch(id: "1") { id } }' });
    expect(m.status).toBe(405);
    expect(m.cacheControl).toBe('no-store');
  });
});

describe('errors and Cache-Control', () => {
  it('an invalid token is 401 no-store on every transport', async () => {
    const headers = { authorization: 'Bearer not.a.jwt' };
    for (const r of [
      await send('POST', { query: '{ item(id: "1") { id } }' }, headers),
      await send('GET', { query: '{ item(id: "1") { id } }' }, headers),
      await send('POST', [{ query: '{ item(id: "1") { id } }' }], headers),
    ]) {
      expect(r.status).toBe(401);
      expect(r.cacheControl).toBe('no-store');
    }
  });

  it('malformed requests are no-store', async () => {
    expect(await send('POST', '{"query": ')).toMatchObject({ status: 400, cacheControl: 'no-store' });
    expect(await send('POST', { query: '{ item(' })).toMatchObject({ status: 400, cacheControl: 'no-store' });
    expect(await send('GET', {})).toMatchObject({ status: 400, cacheControl: 'no-store' });
  });

  it('a query over the limits is analysed once, however often it comes', async () => {
    const debug = jest.spyOn(gw.logger, 'debug');
    try {
      const query = `{ item(id: "cached") { next { next { next { id } } } } }`;
      for (let i = 0; i < 5; i++) expect((await send('POST', { query })).status).toBe(400);
      const ok = `{ item(id: "cached") { id } }`;
      for (let i = 0; i < 5; i++) expect((await send('GET', { query: ok })).status).toBe(200);
      // Once per parsed document: the refused POST on the lean path's and on Apollo Server's (which
      // words the refusal), the GET on Apollo Server's; never once per request.
      expect(debug.mock.calls.filter((c) => c[1] === 'operation analysed').map((c) => (c[0] as { depth: number }).depth)).toEqual([
        5, 5, 2,
      ]);
    } finally {
      debug.mockRestore();
    }
  });

  it('no stack traces, whatever fails', async () => {
    const { body } = await send('POST', { query: '{ item(' });
    expect(JSON.stringify(body)).not.toMatch(/stacktrace|at .*\.js/i);
  });
});

describe('trusted documents (GRAPHQL_TRUSTED_DOCUMENTS)', () => {
  it('runs only the manifest’s operations, by hash or in full', async () => {
    const listed = 'query Listed { item(id: "t") { name } }';
    const manifest = {
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: [{ id: sha256(listed), name: 'Listed', type: 'query', body: listed }],
    };
    const path = `${supergraph.path}.manifest.json`;
    writeFileSync(path, JSON.stringify(manifest));
    const trusted = await startGateway({
      CONTENT_URL: subgraph.url,
      SUPERGRAPH_PATH: supergraph.path,
      GRAPHQL_TRUSTED_DOCUMENTS: path,
      GRAPHQL_INTROSPECTION: 'true',
    });
    try {
      const expected = { data: { item: { name: 'item t' } } };
      expect((await send('POST', { extensions: persisted(listed) }, {}, trusted.url)).body).toEqual(expected);
      expect((await send('GET', { extensions: persisted(listed) }, {}, trusted.url)).body).toEqual(expected);
      expect((await send('POST', { query: listed }, {}, trusted.url)).body).toEqual(expected);
      const before = subgraph.calls();
      for (const query of ['{ item(id: "t") { name } }', getIntrospectionQuery()]) {
        const r = await send('POST', { query }, {}, trusted.url);
        expect(r.status).toBe(400);
        expect(r.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_IN_LIST');
        // Registering it as a persisted query changes nothing.
        const apq = await send('POST', { query, extensions: persisted(query) }, {}, trusted.url);
        expect(apq.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_IN_LIST');
        expect((await send('POST', { extensions: persisted(query) }, {}, trusted.url)).body.errors[0].extensions.code).toBe(
          'PERSISTED_QUERY_NOT_FOUND',
        );
      }
      expect(subgraph.calls()).toBe(before);
    } finally {
      await trusted.stop();
    }
  });

  it('a manifest whose ids are not the hashes of their queries stops the gateway at start', async () => {
    const path = `${supergraph.path}.bad.json`;
    writeFileSync(path, JSON.stringify({ [sha256('{ a }')]: '{ b }' }));
    await expect(
      startGateway({ CONTENT_URL: subgraph.url, SUPERGRAPH_PATH: supergraph.path, GRAPHQL_TRUSTED_DOCUMENTS: path }),
    ).rejects.toThrow(/GRAPHQL_TRUSTED_DOCUMENTS.*is not the SHA-256 of its query/);
  });
});
