import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createHaloClient } from '@halo/client';
import { bearer, startE2ESystem } from './helpers';

/**
 * `@defer` end to end through the running system, as client teams use it: Apollo Client 4 (its
 * HTTP link asks for parts and parses the multipart answer itself) and the SDK's `deferred()`.
 * The order of parts against a slow field is gateway/test/defer.test.ts's; here the point is that
 * real clients get the primary part first and assemble the same answer the query gets whole.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true });
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const DEFERRED = `query Feed {
  posts(first: 3) {
    edges { node { id title ... @defer(label: "details") { author { name } comments { body author { name } } } } }
  }
}`;
const WHOLE = DEFERRED.replace(' @defer(label: "details")', '');

type Json = any;

/** Apollo Client adds `__typename` to every selection; the gateway's whole answer has none. */
function withoutTypename(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutTypename);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => k !== '__typename')
      .map(([k, v]) => [k, withoutTypename(v)]),
  );
}

async function whole(): Promise<Json> {
  const res = await fetch(`${sys.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: WHOLE }),
  });
  const body: Json = await res.json();
  expect(body.errors).toBeUndefined();
  return body.data;
}

describe('@defer end to end', () => {
  it('Apollo Client 4 asks for parts, parses them with its own parser and assembles the whole answer', async () => {
    // What the gateway answered Apollo Client's own request with.
    const seen: { accept: string | null; contentType: string | null }[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      seen.push({ accept: new Headers(init?.headers).get('accept'), contentType: res.headers.get('content-type') });
      return res;
    };
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${sys.url}/graphql`, fetch: recording }),
      cache: new InMemoryCache(),
      incrementalHandler: new Defer20220824Handler(),
    });
    try {
      const states: { dataState: string; data: Json }[] = [];
      await new Promise<void>((resolve, reject) => {
        const sub = client.watchQuery({ query: gql(DEFERRED), fetchPolicy: 'network-only' }).subscribe({
          next: (result) => {
            states.push({ dataState: result.dataState, data: result.data });
            if (result.dataState === 'complete') {
              sub.unsubscribe();
              resolve();
            }
          },
          error: reject,
        });
      });
      expect(seen).toEqual([
        { accept: expect.stringContaining('deferSpec=20220824'), contentType: expect.stringMatching(/^multipart\/mixed/) },
      ]);
      // Parts that arrive together may be applied in one go: only the end state is certain here
      // (the order of arrival against a slow field is gateway/test/defer.test.ts's).
      expect(states.at(-1)!.dataState).toBe('complete');
      expect(withoutTypename(states.at(-1)!.data)).toEqual(await whole());
    } finally {
      client.stop();
    }
  });

  it("the SDK's deferred() yields the answer as it grows, ending with the whole answer", async () => {
    const client = createHaloClient({ baseUrl: sys.url });
    try {
      const values: Json[] = [];
      for await (const value of client.graphql.deferred(DEFERRED)) values.push(value);
      expect(values.length).toBeGreaterThan(1);
      expect(values[0].hasNext).toBe(true);
      expect(values[0].data.posts.edges[0].node).not.toHaveProperty('author');
      expect(values.at(-1).hasNext).toBe(false);
      expect(values.at(-1).errors).toBeUndefined();
      expect(JSON.stringify(values.at(-1).data)).toBe(JSON.stringify(await whole()));
    } finally {
      await client.close();
    }
  });

  it('a subscription with @defer delivers each event whole (the fragment is simply not deferred)', async () => {
    const auth = bearer('2', 'Alice', 'user');
    const client = createClient({
      url: `${sys.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: auth,
      retryAttempts: 0,
      lazy: false,
    });
    const chatId = `defer-${Date.now()}`;
    try {
      const events = client.iterate({
        query: 'subscription($c: ID!) { newMessage(chatId: $c) { id ... @defer { text author { name } } } }',
        variables: { c: chatId },
      });
      const first = events.next();
      // Sent until the subscription is in place upstream (the first send may come before it).
      let event: Json;
      for (let i = 0; i < 50 && event === undefined; i++) {
        const sent = await fetch(`${sys.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth },
          body: JSON.stringify({
            query: 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }',
            variables: { c: chatId, t: 'deferred?' },
          }),
        });
        expect(sent.status).toBe(200);
        event = await Promise.race([first, new Promise((r) => setTimeout(r, 200))]);
      }
      expect(event.value.errors).toBeUndefined();
      expect(event.value.data.newMessage).toEqual({ id: expect.any(String), text: 'deferred?', author: { name: 'Alice' } });
      await events.return?.();
    } finally {
      await client.dispose();
    }
  });
});
