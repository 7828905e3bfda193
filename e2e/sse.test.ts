import { createClient, type Client } from 'graphql-sse';
import { createHaloClient, GraphQLRequestError, type HaloClient } from '@halo/client';
import { sseTransport } from '@halo/client/sse';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { gql, metricValue, startE2ESystem } from './helpers';

/**
 * GraphQL over Server-Sent Events through the gateway (`/graphql/stream`, the graphql-sse
 * protocol's distinct connections mode), with the graphql-sse library's own client: the same
 * auth, limits and per-event entity fetching as the WebSocket transport (e2e/chat.test.ts).
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
let stream: string;

beforeAll(async () => {
  sys = await startE2ESystem();
  gateway = sys.url;
  stream = `${gateway}/graphql/stream`;
}, 120_000);

const sdks: HaloClient[] = [];

afterAll(async () => {
  await Promise.all(sdks.map((c) => c.close()));
  await sys?.stop();
});

const tokenFor = (sub: string, name = `User ${sub}`) => signAccessToken({ sub, name, role: 'user' }, TEST_JWT_SECRET, 300);

function connect(token?: string): Client {
  return createClient({ url: stream, headers: token ? { authorization: `Bearer ${token}` } : {}, retryAttempts: 0 });
}

interface Stream {
  events: any[]; // any: GraphQL results, asserted per test
  errors: unknown[];
  completed: boolean;
  stop(): void;
}

function listen(client: Client, query: string, variables: Record<string, unknown> = {}): Stream {
  const s: Stream = { events: [], errors: [], completed: false, stop: () => undefined };
  s.stop = client.subscribe(
    { query, variables },
    {
      next: (v) => void s.events.push(v),
      error: (e) => void s.errors.push(e),
      complete: () => void (s.completed = true),
    },
  );
  return s;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id chatId text } }';
const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id chatId text author { id name } } }';

/** A subscription hears only what is sent once it is live upstream: probes until one arrives. */
async function live(s: Stream, token: string, chatId: string): Promise<() => any[]> {
  const deadline = Date.now() + 15_000;
  for (let i = 0; Date.now() < deadline; i++) {
    const probe = `probe ${i} ${Math.random()}`;
    const res = await gql(gateway, SEND, { c: chatId, t: probe }, { authorization: `Bearer ${token}` });
    expect(res.body.errors).toBeUndefined();
    const at = () => s.events.findIndex((e) => e.data?.newMessage?.text === probe);
    await until('the probe', () => at() >= 0, 500).catch(() => undefined);
    if (at() >= 0) return () => s.events.slice(at() + 1);
  }
  throw new Error(`subscription on ${chatId} never became live: ${JSON.stringify(s.errors)}`);
}

/** The gateway's `halo_graphql_subscriptions` (its metrics port), or a chat process's (its HTTP port). */
const gauge = (url: string) => metricValue(url.endsWith('/metrics') ? url : `${url}/metrics`, 'halo_graphql_subscriptions');

/** A raw stream request: status, headers and the whole body (streams here end: one result, or a refusal). */
async function post(body: string, headers: Record<string, string> = {}) {
  const res = await fetch(stream, {
    method: 'POST',
    headers: { accept: 'text/event-stream', 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('subscriptions over SSE', () => {
  it('delivers newMessage with the author from content, and a client that leaves ends the upstream subscription', async () => {
    const alice = tokenFor('2');
    const { body } = await gql(gateway, '{ user(id: "2") { name } }');
    const authorName = body.data.user.name as string;
    const room = `e2e-sse-${Date.now()}`;
    const client = connect(alice);
    try {
      const s = listen(client, NEW, { c: room });
      const after = await live(s, alice, room);
      expect(await gauge(sys.gatewayMetricsUrl)).toBe(1);
      expect(await gauge(sys.direct('chat'))).toBe(1);
      const sent = await gql(gateway, SEND, { c: room, t: 'over SSE' }, { authorization: `Bearer ${alice}` });
      await until('the message', () => after().length >= 1);
      expect(after()[0]).toEqual({
        data: { newMessage: { id: sent.body.data.sendMessage.id, chatId: room, text: 'over SSE', author: { id: '2', name: authorName } } },
      });
      expect(s.errors).toEqual([]);
      // The client goes away: the gateway's subscription and chat's end.
      s.stop();
      await until("the gateway's gauge to reach 0", async () => (await gauge(sys.gatewayMetricsUrl)) === 0);
      await until("chat's gauge to reach 0", async () => (await gauge(sys.direct('chat'))) === 0);
    } finally {
      client.dispose();
    }
  });

  it('answers with an event stream that proxies neither buffer nor cache, opened by a keep-alive comment', async () => {
    const abort = new AbortController();
    const res = await fetch(`${stream}?query=${encodeURIComponent(NEW)}&variables=${encodeURIComponent('{"c":"e2e-sse-headers"}')}`, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${tokenFor('2')}` },
      signal: abort.signal,
    });
    try {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('x-accel-buffering')).toBe('no');
      const first = await res.body!.getReader().read();
      expect(new TextDecoder().decode(first.value)).toBe(':\n\n');
    } finally {
      abort.abort();
    }
    await until("the gateway's gauge to reach 0", async () => (await gauge(sys.gatewayMetricsUrl)) === 0);
  });

  it('runs queries and mutations too, through the same pipeline as HTTP', async () => {
    const client = connect(tokenFor('2'));
    try {
      const result = await new Promise<any>((resolve, reject) => {
        let value: unknown;
        client.subscribe(
          { query: SEND, variables: { c: `e2e-sse-m-${Date.now()}`, t: 'a mutation over SSE' } },
          { next: (v) => (value = v), error: reject, complete: () => resolve(value) },
        );
      });
      expect(result.data.sendMessage).toMatchObject({ text: 'a mutation over SSE' });
    } finally {
      client.dispose();
    }
  });
});

describe('refusals', () => {
  /** A refused operation: one `next` event with errors, then `complete` (graphql-sse's own way for validation errors). */
  async function refusal(query: string, token?: string): Promise<unknown[]> {
    const client = connect(token);
    try {
      const s = listen(client, query, { c: 'x' });
      await until('the end of the stream', () => s.completed || s.errors.length > 0);
      expect(s.errors).toEqual([]);
      expect(s.events).toHaveLength(1);
      expect(s.events[0].data).toBeUndefined();
      return s.events[0].errors as unknown[];
    } finally {
      client.dispose();
    }
  }

  it('an anonymous subscriber is refused with UNAUTHENTICATED, as over WebSocket; a bad token is a 401 before any stream', async () => {
    expect(await refusal(NEW)).toEqual([expect.objectContaining({ extensions: { code: 'UNAUTHENTICATED' } })]);
    const forged = signAccessToken({ sub: '2', name: 'x', role: 'user' }, 'not-the-secret-not-the-secret-not-the-secret', 300);
    const res = await post(JSON.stringify({ query: NEW, variables: { c: 'x' } }), { authorization: `Bearer ${forged}` });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(JSON.parse(res.text)).toEqual({ errors: [{ message: 'Invalid token', extensions: { code: 'UNAUTHENTICATED' } }] });
    expect(await gauge(sys.gatewayMetricsUrl)).toBe(0);
  });

  it('depth and cost limits hold as for HTTP and WebSocket', async () => {
    const token = tokenFor('2');
    const deep = 'subscription($c: ID!) { newMessage(chatId: $c) { author { posts { author { posts { author { posts { id } } } } } } } }';
    expect(await refusal(deep, token)).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'MAX_DEPTH_LIMIT', depth: 8, maxDepth: 7 }) }),
    ]);
    const costly = 'subscription($c: ID!) { newMessage(chatId: $c) { author { posts { comments { author { posts { id } } } } } } }';
    expect(await refusal(costly, token)).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'COST_ESTIMATED_TOO_EXPENSIVE', maxCost: 1000 }) }),
    ]);
    expect(await refusal('subscription { nope }', token)).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }) }),
    ]);
  });

  it('a malformed request is a clear 4xx in the GraphQL error shape, never a 500', async () => {
    const bad = async (status: number, code: string, message: string, res: { status: number; text: string }) => {
      expect({ status: res.status, body: JSON.parse(res.text) as unknown }).toEqual({
        status,
        body: { errors: [{ message, extensions: { code } }] },
      });
    };
    await bad(400, 'BAD_REQUEST', 'Invalid JSON', await post('{"query": '));
    await bad(400, 'BAD_REQUEST', 'Missing query', await post('{}'));
    await bad(400, 'BAD_REQUEST', 'The body must be a JSON object', await post('[1]'));
    await bad(400, 'BAD_REQUEST', 'Invalid variables', await post(JSON.stringify({ query: NEW, variables: [1] })));
    await bad(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'Content-Type must be application/json',
      await post('query=x', { 'content-type': 'text/plain' }),
    );
    await bad(406, 'NOT_ACCEPTABLE', 'Accept must include text/event-stream', await post('{}', { accept: 'application/json' }));
    const put = await fetch(stream, { method: 'PUT', headers: { accept: 'text/event-stream' } });
    expect(put.headers.get('allow')).toBe('GET, POST');
    await bad(405, 'METHOD_NOT_ALLOWED', 'Use GET or POST', { status: put.status, text: await put.text() });
    const get = await fetch(`${stream}?query=${encodeURIComponent(SEND)}&variables=${encodeURIComponent('{"c":"x","t":"y"}')}`, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${tokenFor('2')}` },
    });
    await bad(405, 'METHOD_NOT_ALLOWED', 'Mutations are not allowed over GET', { status: get.status, text: await get.text() });
  });
});

describe('the SDK over SSE (subscriptions.transport: sseTransport)', () => {
  /** An SDK client on SSE whose requests' paths are recorded. */
  function sdk() {
    const paths: string[] = [];
    const client = createHaloClient({
      baseUrl: gateway,
      subscriptions: { transport: sseTransport },
      fetch: (input, init) => {
        paths.push(new URL(input instanceof Request ? input.url : input).pathname);
        return fetch(input, init);
      },
    });
    sdks.push(client);
    return { client, paths };
  }

  function sdkListen(client: HaloClient, chatId: string): Stream {
    const s: Stream = { events: [], errors: [], completed: false, stop: () => undefined };
    s.stop = client.graphql.subscribe(NEW, { c: chatId }, { next: (r) => void s.events.push(r), error: (e) => void s.errors.push(e) });
    return s;
  }

  it('newMessage with the author; a refused token (401) is renewed once with the refresh cookie', async () => {
    const { client, paths } = sdk();
    await client.auth.login({ email: 'alice@halo.local', password: 'password123' });
    client.setAccessToken('not-a-valid-token');
    const room = `e2e-sdk-sse-${Date.now()}`;
    const s = sdkListen(client, room);
    await until('the renewal', () => client.accessToken !== 'not-a-valid-token');
    const after = await live(s, client.accessToken!, room);
    expect(paths.filter((p) => p === '/auth/refresh')).toHaveLength(1);
    expect(paths).toContain('/graphql/stream');
    await gql(gateway, SEND, { c: room, t: 'halo lewat SSE' }, { authorization: `Bearer ${client.accessToken!}` });
    await until('the message', () => after().length > 0);
    expect(after()[0].data.newMessage).toMatchObject({ text: 'halo lewat SSE', author: { name: 'Alice' } });
    expect(s.errors).toEqual([]);
    s.stop();
  });

  it('an anonymous subscription ends with GraphQLRequestError UNAUTHENTICATED, as over WebSocket', async () => {
    const s = sdkListen(sdk().client, `e2e-sdk-anon-${Date.now()}`);
    await until('the refusal', () => s.errors.length > 0);
    expect(s.errors[0]).toBeInstanceOf(GraphQLRequestError);
    expect((s.errors[0] as GraphQLRequestError).codes).toEqual(['UNAUTHENTICATED']);
    expect(s.events).toEqual([]);
  });
});
