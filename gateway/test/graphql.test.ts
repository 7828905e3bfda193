import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { GraphQLError, parse } from 'graphql';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { closedPort, composeSupergraph, rawRequest, startGateway, tempSupergraph, until, type RunningGateway } from './helpers';

/**
 * Federated GraphQL through the gateway, against a real (tiny) subgraph named `content` served by
 * @apollo/server over node:http. It reports the headers the gateway forwarded to it.
 */

const SUBGRAPH_V1 = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key", "@authenticated"])
  type User @key(fields: "id") { id: ID! name: String! secret: Secret }
  type Secret @authenticated { value: String! }
  type Seen { authorization: String requestId: String }
  type Query {
    seen: Seen!
    user(id: ID!): User
    whoami: String @authenticated
  }
  type Mutation { rename(id: ID!, name: String!): User! }
`;
/** V1 plus one field: what a newly composed supergraph would add. */
const SUBGRAPH_V2 = SUBGRAPH_V1.replace('seen: Seen!', 'seen: Seen!\n    version: String!');

interface SubgraphContext {
  headers: Record<string, string | string[] | undefined>;
}

const header = (ctx: SubgraphContext, name: string) => {
  const v = ctx.headers[name];
  return Array.isArray(v) ? v.join(', ') : (v ?? null);
};

let subgraph: ApolloServer<SubgraphContext>;
let subgraphUrl: string;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  // The subgraph already serves V2; the gateway starts on a supergraph composed from V1.
  subgraph = new ApolloServer<SubgraphContext>({
    plugins: [ApolloServerPluginInlineTraceDisabled()],
    schema: buildSubgraphSchema({
      typeDefs: parse(SUBGRAPH_V2),
      resolvers: {
        Query: {
          seen: (_: unknown, __: unknown, ctx: unknown) => ({
            authorization: header(ctx as SubgraphContext, 'authorization'),
            requestId: header(ctx as SubgraphContext, 'x-request-id'),
          }),
          version: () => 'v2',
          whoami: () => 'someone',
          user: (_: unknown, { id }: { id: string }) => {
            if (id === '0') throw new GraphQLError('User not found', { extensions: { code: 'NOT_FOUND' } });
            return { id, name: `user ${id}`, secret: { value: 's3cret' } };
          },
        },
        Mutation: { rename: (_: unknown, { id, name }: { id: string; name: string }) => ({ id, name }) },
      },
    }),
  });
  const { url } = await startStandaloneServer(subgraph, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({ headers: req.headers }),
  });
  subgraphUrl = url.replace(/\/$/, '');
  // The URL composed into the supergraph is deliberately wrong: CONTENT_URL must win.
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: SUBGRAPH_V1, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({ CONTENT_URL: subgraphUrl, SUPERGRAPH_PATH: supergraph.path, JWT_SECRET: TEST_JWT_SECRET });
});

afterAll(async () => {
  await gw?.stop();
  await subgraph?.stop();
  supergraph?.remove();
});

async function post(body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { res, body: (await res.json()) as any };
}

const token = signAccessToken({ sub: '2', name: 'Alice', role: 'user' }, TEST_JWT_SECRET, 300);

it('reaches the subgraph and forwards authorization and the request id', async () => {
  const { res, body } = await post(
    { query: '{ seen { authorization requestId } }' },
    { authorization: `Bearer ${token}`, 'x-request-id': 'gql-req-1' },
  );
  expect(res.status).toBe(200);
  expect(res.headers.get('x-request-id')).toBe('gql-req-1');
  expect(body).toEqual({ data: { seen: { authorization: `Bearer ${token}`, requestId: 'gql-req-1' } } });
});

describe('authentication at the edge', () => {
  it('an invalid token is HTTP 401 UNAUTHENTICATED on any operation, before any subgraph is called', async () => {
    for (const bad of [
      'Bearer not.a.jwt',
      `Bearer ${signAccessToken({ sub: '2', name: 'A', role: 'user' }, 'another-secret-of-at-least-32-bytes!!', 300)}`,
    ]) {
      const { res, body } = await post({ query: '{ seen { requestId } }' }, { authorization: bad });
      expect(res.status).toBe(401);
      expect(body.errors[0]).toMatchObject({ message: 'Invalid token', extensions: { code: 'UNAUTHENTICATED' } });
      expect(body.data).toBeUndefined();
    }
  });

  it.each([
    ['an @authenticated field', '{ whoami }'],
    ['a field of an @authenticated type', '{ user(id: "1") { name secret { value } } }'],
    ['the same through a fragment', 'query { user(id: "1") { ...S } } fragment S on User { secret { value } }'],
  ])('%s without a token → HTTP 401 Token required', async (_what, query) => {
    const { res, body } = await post({ query });
    expect(res.status).toBe(401);
    expect(body.errors[0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
  });

  it('the same operations succeed with a valid token; public fields need none', async () => {
    const authed = await post({ query: '{ whoami user(id: "1") { secret { value } } }' }, { authorization: `Bearer ${token}` });
    expect(authed.res.status).toBe(200);
    expect(authed.body).toEqual({ data: { whoami: 'someone', user: { secret: { value: 's3cret' } } } });
    const anonymous = await post({ query: '{ user(id: "1") { name } }' });
    expect(anonymous.res.status).toBe(200);
    expect(anonymous.body.data).toEqual({ user: { name: 'user 1' } });
  });
});

it('forwards the request id it generated', async () => {
  const { res, body } = await post({ query: '{ seen { authorization requestId } }' });
  const id = res.headers.get('x-request-id');
  expect(id).toBeTruthy();
  expect(body.data.seen).toEqual({ authorization: null, requestId: id });
});

it('answers a batch with an array', async () => {
  const { res, body } = await post([
    { query: '{ user(id: "1") { id name } }' },
    { query: 'query Q($id: ID!) { user(id: $id) { name } }', variables: { id: '2' } },
  ]);
  expect(res.status).toBe(200);
  expect(body).toEqual([{ data: { user: { id: '1', name: 'user 1' } } }, { data: { user: { name: 'user 2' } } }]);
});

it('keeps a subgraph error’s code', async () => {
  const { res, body } = await post({ query: '{ user(id: "0") { id } }' });
  expect(res.status).toBe(200);
  expect(body.data).toEqual({ user: null });
  expect(body.errors[0].message).toBe('User not found');
  expect(body.errors[0].extensions.code).toBe('NOT_FOUND');
  expect(JSON.stringify(body)).not.toMatch(/stacktrace/i);
});

it('answers SERVICE_UNAVAILABLE, without internal addresses, when the subgraph is down', async () => {
  const down = await startGateway({ CONTENT_URL: `http://127.0.0.1:${await closedPort()}`, SUPERGRAPH_PATH: supergraph.path });
  try {
    const res = await fetch(`${down.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ user(id: "1") { name } }' }),
    });
    const body = (await res.json()) as { data: unknown; errors: { message: string; extensions: { code: string } }[] };
    expect(body.data).toEqual({ user: null });
    expect(body.errors[0]!.message).toBe('Service unavailable');
    expect(body.errors[0]!.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
  } finally {
    await down.stop();
  }
});

it('serves queries over GET without a preflight header', async () => {
  const res = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('{ user(id: "3") { name } }')}`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ data: { user: { name: 'user 3' } } });
});

it('refuses a mutation over GET with 405', async () => {
  const query = encodeURIComponent('mutation { rename(id: "1", name: "x") { id } }');
  const res = await fetch(`${gw.url}/graphql?query=${query}`);
  expect(res.status).toBe(405);
});

it('runs a mutation over POST', async () => {
  const { body } = await post({ query: 'mutation { rename(id: "1", name: "Budi") { id name } }' });
  expect(body).toEqual({ data: { rename: { id: '1', name: 'Budi' } } });
});

it('400 Invalid JSON for a malformed body', async () => {
  const { res, body } = await post('{"query": ');
  expect(res.status).toBe(400);
  expect(body).toEqual({ error: 'Invalid JSON' });
});

it('413 for a body over the limit', async () => {
  const res = await rawRequest(gw.port, {
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json' },
    declaredLength: 2 * 1024 * 1024,
  });
  expect(res.status).toBe(413);
  expect(JSON.parse(res.body)).toEqual({ error: 'Payload too large' });
});

it('reports ready once the supergraph is loaded', async () => {
  expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  const ready = await fetch(`${gw.url}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ status: 'ready', source: 'file', registry: 'off' });
});

it('hot-reloads a new supergraph and keeps the old one when a new one is broken', async () => {
  const query = { query: '{ version }' };
  const before = await post(query);
  expect(before.res.status).toBe(400);
  expect(before.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');

  // A broken file is refused; the running supergraph keeps serving.
  const errors = jest.spyOn(gw.logger, 'error');
  supergraph.write('this is not a supergraph');
  await until(() => errors.mock.calls.some((c) => c[1] === 'supergraph rejected; keeping the previous one'));
  expect((await post({ query: '{ user(id: "4") { name } }' })).body).toEqual({ data: { user: { name: 'user 4' } } });
  errors.mockRestore();

  supergraph.write(composeSupergraph([{ name: 'content', sdl: SUBGRAPH_V2, url: 'http://127.0.0.1:1/graphql' }]));
  const after = await until(async () => {
    const r = await post(query);
    return r.res.status === 200 ? r : null;
  });
  expect(after.body).toEqual({ data: { version: 'v2' } });
});
