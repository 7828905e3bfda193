import { writeFileSync } from 'node:fs';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { sha256 } from '../src/graphql/persisted';
import { composeSupergraph, startGateway, startSubgraph, tempSupergraph, type RunningGateway, type TestSubgraph } from './helpers';

/**
 * Trusted documents mode (GRAPHQL_TRUSTED_DOCUMENTS) over a WebSocket and an event stream: only the
 * manifest's operations are admitted there too — subscriptions included, which are planned and
 * forwarded by the gateway itself, not by Apollo Server's path (edge.test.ts covers HTTP).
 */
const SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { ping(text: String): String }
  type Subscription { pinged: String }
`;
const LISTED_QUERY = '{ ping }';
const LISTED_SUBSCRIPTION = 'subscription Listed { pinged }';
let subgraph: TestSubgraph;
let supergraph: ReturnType<typeof tempSupergraph>;
let gw: RunningGateway;

beforeAll(async () => {
  subgraph = await startSubgraph(SDL, { Query: { ping: () => 'pong' } });
  supergraph = tempSupergraph(composeSupergraph([{ name: 'content', sdl: SDL, url: 'http://127.0.0.1:1/graphql' }]));
  const manifest = `${supergraph.path}.trusted.json`;
  writeFileSync(manifest, JSON.stringify(Object.fromEntries([LISTED_QUERY, LISTED_SUBSCRIPTION].map((q) => [sha256(q), q]))));
  gw = await startGateway({ CONTENT_URL: subgraph.url, SUPERGRAPH_PATH: supergraph.path, GRAPHQL_TRUSTED_DOCUMENTS: manifest });
});
afterAll(async () => {
  await gw?.stop();
  await subgraph?.stop();
  supergraph?.remove();
});

type Outcome = { next?: unknown; errors?: { extensions?: { code?: string } }[] };
/** The first thing the socket answers for `query`: a result, or the errors it was refused with. */
async function overWebSocket(query: string): Promise<Outcome> {
  const client = createClient({ url: `${gw.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
  try {
    return await new Promise<Outcome>((resolve) => {
      client.subscribe(
        { query },
        {
          next: (v) => resolve(v.errors ? { errors: v.errors as unknown as Outcome['errors'] } : { next: v }),
          error: (e) => resolve({ errors: e as Outcome['errors'] }),
          complete: () => undefined,
        },
      );
    });
  } finally {
    await client.dispose();
  }
}

async function overEventStream(query: string): Promise<Outcome> {
  const res = await fetch(`${gw.url}/graphql/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query }),
  });
  const text = await res.text();
  const data = text.split('\n').find((l) => l.startsWith('data: {'));
  const result = JSON.parse(data!.slice('data: '.length)) as { errors?: Outcome['errors'] };
  return result.errors ? { errors: result.errors } : { next: result };
}

const codeOf = (o: Outcome) => o.errors?.[0]?.extensions?.code;

it.each([
  ['WebSocket', overWebSocket],
  ['event stream', overEventStream],
])('over a %s: an unlisted subscription or query is refused PERSISTED_QUERY_NOT_IN_LIST before anything is forwarded', async (_t, send) => {
  const before = subgraph.calls();
  expect(codeOf(await send('subscription { pinged }'))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
  expect(codeOf(await send('{ ping(text: "not listed") }'))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
  expect(subgraph.calls()).toBe(before);
});

it.each([
  ['WebSocket', overWebSocket],
  ['event stream', overEventStream],
])('over a %s: the listed operations are admitted', async (_t, send) => {
  expect(await send(LISTED_QUERY)).toEqual({ next: { data: { ping: 'pong' } } });
  // Admitted and forwarded: this test subgraph serves no subscriptions, so the upstream's refusal comes back.
  expect(codeOf(await send(LISTED_SUBSCRIPTION))).toBe('UNAVAILABLE');
});
