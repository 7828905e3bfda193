import { composeSupergraph, startGateway, startSubgraph, tempSupergraph, type RunningGateway, type TestSubgraph } from './helpers';

/**
 * GraphQL request errors at the gateway (src/graphql/request-checks.ts), in-process against a real
 * subgraph: each is HTTP 400 with a code of its own and never reaches the subgraph.
 */
const SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { ping(text: String): String }
  type Subscription { pinged: String }
`;
let subgraph: TestSubgraph;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  subgraph = await startSubgraph(SDL, { Query: { ping: () => 'pong' } });
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: SDL, url: 'http://127.0.0.1:1/graphql' }]));
  gw = await startGateway({ CONTENT_URL: subgraph.url, SUPERGRAPH_PATH: supergraph.path });
});
afterAll(async () => {
  await gw?.stop();
  await subgraph?.stop();
  supergraph?.remove();
});

const post = async (body: unknown) => {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
};
const codesOf = (body: unknown) =>
  (Array.isArray(body) ? body : [body]).flatMap(
    (b: { errors?: { extensions?: { code?: string } }[] }) => b.errors?.map((e) => e.extensions?.code) ?? [],
  );

it.each([
  ['an unknown operationName', { query: 'query A { ping }', operationName: 'B' }, 'UNKNOWN_OPERATION_NAME'],
  ['two operations, no operationName', { query: 'query A { ping } query B { ping }' }, 'OPERATION_NAME_REQUIRED'],
  [
    'variables 65 levels deep',
    { query: '{ ping }', variables: { v: JSON.parse(`${'{"a":'.repeat(64)}1${'}'.repeat(64)}`) as unknown } },
    'VARIABLES_DEPTH_LIMIT',
  ],
  [
    'extensions 65 levels deep',
    { query: '{ ping }', extensions: { v: JSON.parse(`${'['.repeat(64)}${']'.repeat(64)}`) as unknown } },
    'VARIABLES_DEPTH_LIMIT',
  ],
  [
    'an APQ hash that is not the query’s',
    { query: '{ ping }', extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } },
    'PERSISTED_QUERY_HASH_MISMATCH',
  ],
  ['an unsupported persisted-query version', { extensions: { persistedQuery: {} } }, 'BAD_REQUEST'],
  ['an empty operationName (no operation is named "")', { query: '{ ping }', operationName: '' }, 'UNKNOWN_OPERATION_NAME'],
  // Found by e2e/faults/request-mistakes.test.ts's fuzz: a 400 coded INTERNAL_SERVER_ERROR before.
  ['a batch of those two', [{ query: '{ ping }', operationName: '' }, { extensions: { a: 1 } }], ['UNKNOWN_OPERATION_NAME', 'BAD_REQUEST']],
])('%s → 400 with its own code, and no subgraph call', async (_name, body, code) => {
  const before = subgraph.calls();
  const res = await post(body);
  expect([res.status, codesOf(res.body).filter((c) => c !== undefined)]).toEqual([400, [code].flat()]);
  expect(subgraph.calls()).toBe(before);
});

describe('over GET, whatever spelling of the parameter names the URL uses', () => {
  const deep = encodeURIComponent(`{"v":${'{"a":'.repeat(64)}1${'}'.repeat(64)}}`);
  it.each([
    ['variables=', `variables=${deep}`],
    ['%76ariables= (the same name, percent-encoded)', `%76ariables=${deep}`],
    ['extensio%6Es=', `extensio%6Es=${deep}`],
  ])('%s 65 levels deep → 400 VARIABLES_DEPTH_LIMIT, and no subgraph call', async (_name, param) => {
    const before = subgraph.calls();
    const res = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('{ ping }')}&${param}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect([res.status, codesOf(await res.json())]).toEqual([400, ['VARIABLES_DEPTH_LIMIT']]);
    expect(subgraph.calls()).toBe(before);
  });
});

describe('a subscription sent as a plain HTTP request', () => {
  it.each([
    ['POST', () => post({ query: 'subscription { pinged }' })],
    [
      'GET',
      async () => {
        const res = await fetch(`${gw.url}/graphql?query=${encodeURIComponent('subscription { pinged }')}`);
        return { status: res.status, body: await res.json() };
      },
    ],
  ])('over %s → 400 SUBSCRIPTION_OVER_HTTP naming WebSocket and /graphql/stream, and nothing runs', async (_method, send) => {
    const before = subgraph.calls();
    const res = await send();
    expect([res.status, codesOf(res.body)]).toEqual([400, ['SUBSCRIPTION_OVER_HTTP']]);
    expect((res.body as { errors: { message: string }[] }).errors[0]!.message).toMatch(/WebSocket.*\/graphql\/stream/);
    expect(subgraph.calls()).toBe(before);
  });
});
