import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { buildSchema, graphql, GraphQLError } from 'graphql';
import { createHaloClient, GraphQLRequestError, HaloApiError, mayBeMutation, typed } from '../src';
import { json, recordingSleep, startServer, type TestServer } from './servers';

/**
 * GraphQL over HTTP against a real local server that speaks the protocol the gateway speaks
 * (docs/api/graphql.md): automatic persisted queries (an unknown hash → 200
 * PERSISTED_QUERY_NOT_FOUND; a hash that is not the query's SHA-256 → 400), GET for queries,
 * batching (array in, array out), errors with `extensions.code`. e2e/client.test.ts runs the same
 * against the real gateway.
 */
const schema = buildSchema(`
  type Query { hello(name: String): String!  user(id: ID!): User  users: [User!]! }
  type User { id: ID! name: String! }
  type Mutation { rename(id: ID!, name: String!): User }
`);
const USERS = [
  { id: '1', name: 'Admin' },
  { id: '2', name: 'Alice' },
];
const root = {
  hello: ({ name }: { name?: string }) => `Halo, ${name ?? 'Dunia'}!`,
  users: () => USERS,
  user: ({ id }: { id: string }) => USERS.find((u) => u.id === id) ?? new GraphQLError('Not found', { extensions: { code: 'NOT_FOUND' } }),
  rename: ({ id, name }: { id: string; name: string }) => ({ id, name }),
};

interface Wire {
  query?: string;
  variables?: Record<string, unknown>;
  operationName?: string;
  extensions?: { persistedQuery?: { version: number; sha256Hash: string } };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

class ApqServer {
  registered = new Map<string, string>();
  supportsApq = true;
  server!: TestServer;

  async run(op: Wire): Promise<{ status: number; body: unknown }> {
    let query = op.query;
    const hash = op.extensions?.persistedQuery?.sha256Hash;
    if (hash !== undefined) {
      if (!this.supportsApq)
        return {
          status: 200,
          body: { errors: [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }] },
        };
      if (query !== undefined) {
        if (sha256(query) !== hash)
          return { status: 400, body: { errors: [{ message: 'provided sha does not match query', extensions: { code: 'BAD_REQUEST' } }] } };
        this.registered.set(hash, query);
      } else {
        query = this.registered.get(hash);
        if (query === undefined)
          return {
            status: 200,
            body: { errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] },
          };
      }
    }
    if (query === undefined)
      return { status: 400, body: { errors: [{ message: 'A query is required', extensions: { code: 'BAD_REQUEST' } }] } };
    if (query.includes('tooDeep'))
      return {
        status: 400,
        body: {
          errors: [{ message: 'Query depth 8 exceeds the limit of 7', extensions: { code: 'MAX_DEPTH_LIMIT', depth: 8, maxDepth: 7 } }],
        },
      };
    const result = await graphql({
      schema,
      source: query,
      rootValue: root,
      variableValues: op.variables ?? null,
      operationName: op.operationName ?? null,
    });
    return { status: 200, body: JSON.parse(JSON.stringify(result)) as unknown };
  }

  async start(): Promise<this> {
    this.server = await startServer(async (req: IncomingMessage, res: ServerResponse, body: string) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/graphql') return json(res, 404, { error: 'Not found' });
      if (req.method === 'GET') {
        const p = url.searchParams;
        const op: Wire = {
          ...(p.has('query') ? { query: p.get('query')! } : {}),
          ...(p.has('variables') ? { variables: JSON.parse(p.get('variables')!) as Record<string, unknown> } : {}),
          ...(p.has('extensions') ? { extensions: JSON.parse(p.get('extensions')!) as Wire['extensions'] } : {}),
        };
        const r = await this.run(op);
        return json(res, r.status, r.body);
      }
      const parsed = JSON.parse(body) as Wire | Wire[];
      if (Array.isArray(parsed)) {
        if (parsed.length > 3)
          return json(res, 400, { errors: [{ message: 'Batch of 4 exceeds 3', extensions: { code: 'BATCH_LIMIT_EXCEEDED' } }] });
        const all = await Promise.all(parsed.map((op) => this.run(op)));
        return json(
          res,
          Math.max(...all.map((r) => r.status)),
          all.map((r) => r.body),
        );
      }
      const r = await this.run(parsed);
      return json(res, r.status, r.body);
    });
    return this;
  }

  /** What each request sent: method, and whether it carried the query text and/or a hash. */
  get shapes(): string[] {
    return this.server.seen.map((s) => {
      const url = new URL(s.url, 'http://x');
      const ops: Wire[] =
        s.method === 'GET'
          ? [
              {
                ...(url.searchParams.has('query') ? { query: 'q' } : {}),
                ...(url.searchParams.has('extensions') ? { extensions: {} } : {}),
              },
            ]
          : ([] as Wire[]).concat(JSON.parse(s.body) as Wire | Wire[]);
      return `${s.method} ${ops.map((o) => [o.extensions ? 'hash' : '', o.query ? 'query' : ''].filter(Boolean).join('+')).join(',')}`;
    });
  }
}

let apq: ApqServer;
beforeEach(async () => {
  apq = await new ApqServer().start();
});
afterEach(() => apq.server.close());

const client = (extra: Parameters<typeof createHaloClient>[0] = {}) =>
  createHaloClient({ baseUrl: apq.server.url, sleep: recordingSleep().sleep, ...extra });

describe('automatic persisted queries', () => {
  it('sends the hash alone first; on PERSISTED_QUERY_NOT_FOUND resends hash + query; then the hash is enough', async () => {
    const halo = client();
    const HELLO = typed<{ hello: string }, { n: string }>('query Hello($n: String) { hello(name: $n) }');
    await expect(halo.graphql.query(HELLO, { n: 'Budi' })).resolves.toEqual({ hello: 'Halo, Budi!' });
    expect(apq.shapes).toEqual(['POST hash', 'POST hash+query']);
    const sent = JSON.parse(apq.server.seen[0]!.body) as Wire;
    expect(sent.extensions?.persistedQuery).toEqual({ version: 1, sha256Hash: sha256(HELLO) });
    await expect(halo.graphql.query(HELLO, { n: 'Ani' })).resolves.toEqual({ hello: 'Halo, Ani!' });
    expect(apq.shapes).toEqual(['POST hash', 'POST hash+query', 'POST hash']);
  });

  it('hashes non-ASCII queries as UTF-8, as the server does', async () => {
    const halo = client();
    const q = '{ hello(name: "Dünya ☀") }';
    await expect(halo.graphql.query(q)).resolves.toEqual({ hello: 'Halo, Dünya ☀!' });
    expect(apq.registered.has(sha256(q))).toBe(true);
  });

  it('GET for cacheable queries: the hash in the URL; the registering resend as POST; then GET hits', async () => {
    const halo = client({ graphql: { getForQueries: true } });
    await halo.graphql.query('{ users { name } }');
    await halo.graphql.query('{ users { name } }');
    expect(apq.shapes).toEqual(['GET hash', 'POST hash+query', 'GET hash']);
    // Mutations never go as GET.
    await halo.graphql.mutate('mutation { rename(id: "1", name: "Root") { name } }');
    expect(apq.shapes.slice(3)).toEqual(['POST hash', 'POST hash+query']);
  });

  it('GET without persisted queries puts the query and variables in the URL', async () => {
    const halo = client();
    await expect(
      halo.graphql.query('query($id: ID!) { user(id: $id) { name } }', { id: '2' }, { get: true, persisted: false }),
    ).resolves.toEqual({
      user: { name: 'Alice' },
    });
    const url = new URL(apq.server.seen[0]!.url, 'http://x');
    expect(apq.server.seen[0]!.method).toBe('GET');
    expect(JSON.parse(url.searchParams.get('variables')!)).toEqual({ id: '2' });
  });

  it('persistedQueries: false sends the query every time', async () => {
    const halo = client({ graphql: { persistedQueries: false } });
    await halo.graphql.query('{ hello }');
    await halo.graphql.query('{ hello }');
    expect(apq.shapes).toEqual(['POST query', 'POST query']);
  });

  it('a server without APQ (PERSISTED_QUERY_NOT_SUPPORTED) turns it off for good', async () => {
    apq.supportsApq = false;
    const halo = client();
    await expect(halo.graphql.query('{ hello }')).resolves.toEqual({ hello: 'Halo, Dunia!' });
    await halo.graphql.query('{ hello }');
    expect(apq.shapes).toEqual(['POST hash', 'POST query', 'POST query']);
  });
});

describe('errors', () => {
  it('a business error: GraphQLRequestError with each extensions.code and the partial data', async () => {
    const halo = client();
    const err = (await halo.graphql
      .query('{ a: user(id: "999") { name } b: user(id: "2") { name } }')
      .catch((e: unknown) => e)) as GraphQLRequestError;
    expect(err).toBeInstanceOf(GraphQLRequestError);
    expect(err.codes).toEqual(['NOT_FOUND']);
    expect(err.hasCode('NOT_FOUND')).toBe(true);
    expect(err.status).toBe(200);
    expect(err.data).toEqual({ a: null, b: { name: 'Alice' } });
    expect(err.errors[0]).toMatchObject({ message: 'Not found', path: ['a'] });
  });

  it('a refused operation (HTTP 400) is a GraphQLRequestError too, with its extensions', async () => {
    const halo = client();
    const err = (await halo.graphql
      .query('{ tooDeep: hello }', undefined, { persisted: false })
      .catch((e: unknown) => e)) as GraphQLRequestError;
    expect(err).toMatchObject({ name: 'GraphQLRequestError', status: 400, codes: ['MAX_DEPTH_LIMIT'] });
    expect(err.errors[0]!.extensions).toMatchObject({ depth: 8, maxDepth: 7 });
  });

  it('execute() returns the whole answer without throwing', async () => {
    const halo = client();
    const res = await halo.graphql.execute('query', { query: '{ user(id: "999") { name } }' });
    expect(res.status).toBe(200);
    expect(res.result.data).toEqual({ user: null });
    expect(res.result.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('a non-GraphQL answer is a HaloApiError', async () => {
    const halo = client({ graphql: { path: '/nope' } });
    await expect(halo.graphql.query('{ hello }')).rejects.toBeInstanceOf(HaloApiError);
  });
});

describe('batching', () => {
  it('array in, array out, in order; each answer as is', async () => {
    const halo = client({ graphql: { persistedQueries: false } });
    const results = await halo.graphql.batch([
      { query: '{ hello }' },
      { query: 'query($id: ID!) { user(id: $id) { name } }', variables: { id: '999' } },
      { query: 'query($n: String) { hello(name: $n) }', variables: { n: 'Budi' } },
    ]);
    expect(results).toEqual([
      { data: { hello: 'Halo, Dunia!' } },
      { data: { user: null }, errors: [expect.objectContaining({ message: 'Not found', extensions: { code: 'NOT_FOUND' } })] },
      { data: { hello: 'Halo, Budi!' } },
    ]);
    expect(apq.shapes).toEqual(['POST query,query,query']);
  });

  it('with persisted queries: hashes first, then one resend of just the unknown ones, answers kept in order', async () => {
    const halo = client();
    await halo.graphql.query('{ users { id } }'); // registers this one
    apq.server.seen.length = 0;
    const results = await halo.graphql.batch([{ query: '{ hello }' }, { query: '{ users { id } }' }, { query: '{ hello(name: "X") }' }]);
    expect(results.map((r) => r.data)).toEqual([{ hello: 'Halo, Dunia!' }, { users: [{ id: '1' }, { id: '2' }] }, { hello: 'Halo, X!' }]);
    expect(apq.shapes).toEqual(['POST hash,hash,hash', 'POST hash+query,hash+query']);
    apq.server.seen.length = 0;
    await halo.graphql.batch([{ query: '{ hello }' }, { query: '{ users { id } }' }]);
    expect(apq.shapes).toEqual(['POST hash,hash']);
  });

  it('a refused batch (BATCH_LIMIT_EXCEEDED) is a GraphQLRequestError', async () => {
    const halo = client();
    const ops = Array.from({ length: 4 }, () => ({ query: '{ hello }' }));
    await expect(halo.graphql.batch(ops)).rejects.toMatchObject({
      name: 'GraphQLRequestError',
      status: 400,
      codes: ['BATCH_LIMIT_EXCEEDED'],
    });
  });

  it('is retried only when it holds no mutation', async () => {
    const server = await startServer((_req, res) => json(res, 502, { error: 'Bad gateway' }));
    try {
      const halo = createHaloClient({ baseUrl: server.url, sleep: recordingSleep().sleep, graphql: { persistedQueries: false } });
      await expect(halo.graphql.batch([{ query: '{ a }' }, { query: '{ b }' }])).rejects.toMatchObject({ status: 502 });
      expect(server.seen).toHaveLength(4);
      await expect(halo.graphql.batch([{ query: '{ a }' }, { query: 'mutation { b }' }])).rejects.toMatchObject({ status: 502 });
      expect(server.seen).toHaveLength(5);
    } finally {
      await server.close();
    }
  });

  it('mayBeMutation is conservative', () => {
    expect(mayBeMutation('{ hello }')).toBe(false);
    expect(mayBeMutation('query Q { hello } # a mutation in a comment')).toBe(false);
    expect(mayBeMutation('mutation { x }')).toBe(true);
    expect(mayBeMutation('query { a } mutation M { b }')).toBe(true);
    expect(mayBeMutation('{ hello(name: "mutation") }')).toBe(true); // forgoes a retry, never wrongly retries
  });
});

describe('renewal', () => {
  it('an HTTP 401 UNAUTHENTICATED renews the token and resends the operation', async () => {
    let refreshes = 0;
    const server = await startServer((req, res, body) => {
      if (req.url === '/auth/refresh') {
        refreshes++;
        return json(res, 200, { token: 'fresh', accessToken: 'fresh' });
      }
      if (req.headers.authorization !== 'Bearer fresh')
        return json(res, 401, { errors: [{ message: 'Invalid token', extensions: { code: 'UNAUTHENTICATED' } }] });
      const op = JSON.parse(body) as Wire;
      return json(res, 200, { data: { echo: op.query ?? 'hash' } });
    });
    try {
      const halo = createHaloClient({ baseUrl: server.url, accessToken: 'stale', graphql: { persistedQueries: false } });
      await expect(halo.graphql.query('{ me { id } }')).resolves.toEqual({ echo: '{ me { id } }' });
      expect(refreshes).toBe(1);
    } finally {
      await server.close();
    }
  });
});
