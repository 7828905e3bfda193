import WebSocket from 'ws';
import {
  createHaloClient,
  GraphQLRequestError,
  HaloApiError,
  SignedOutError,
  typed,
  type DeprecationNotice,
  type GraphQLResult,
  type HaloClient,
  type HaloClientOptions,
} from '@halo/client';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { startE2ESystem } from './helpers';

/**
 * The SDK (packages/client) against the real system through the gateway: real login with the
 * seeded users, the refresh cookie in the SDK's jar, products, payments retried with one key,
 * orders, GraphQL with persisted queries, and a `newMessage` subscription that survives the
 * gateway being killed and restarted by the launcher.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;
const clients: HaloClient[] = [];

beforeAll(async () => {
  sys = await startE2ESystem({
    postgres: true,
    // Slow enough that two requests with one key overlap (the 409 "Request in progress" case). A
    // 409's Retry-After is the time left on the key's lock (30 s by default), which the SDK
    // honours: a 3 s lock keeps that wait short here.
    envFor: { payments: { PAYMENTS_PROCESSOR_LATENCY_MS: '300', PAYMENTS_IDEMPOTENCY_LOCK_MS: '3000' } },
  });
  url = sys.url;
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await sys?.stop();
});

interface Call {
  method: string;
  path: string;
  body: string | undefined;
}

/** A client whose requests are recorded (and can be tampered with) by a wrapping fetch. */
function sdk(opts: HaloClientOptions & { tamper?: (call: Call, res: Response) => Response | Promise<Response> } = {}) {
  const calls: Call[] = [];
  const { tamper, ...rest } = opts;
  const client = createHaloClient({
    baseUrl: url,
    subscriptions: { webSocketImpl: WebSocket },
    fetch: async (input, init) => {
      const u = new URL(input instanceof Request ? input.url : input);
      const call = {
        method: init?.method ?? 'GET',
        path: u.pathname + u.search,
        body: typeof init?.body === 'string' ? init.body : undefined,
      };
      calls.push(call);
      const res = await fetch(input, init);
      return tamper ? tamper(call, res) : res;
    },
    ...rest,
  });
  clients.push(client);
  return { client, calls };
}

async function signedIn(email: string, password: string, opts: Parameters<typeof sdk>[0] = {}) {
  const s = sdk(opts);
  await s.client.auth.login({ email, password });
  return s;
}

const ALICE = ['alice@halo.local', 'password123'] as const;
const ADMIN = ['admin@halo.local', 'admin-password'] as const;

describe('accounts and tokens', () => {
  it('logs in with a seeded user and reads the profile', async () => {
    const { client } = sdk();
    const login = await client.auth.login({ email: ALICE[0], password: ALICE[1] });
    expect(login.user.name).toBe('Alice');
    expect(client.accessToken).toBe(login.accessToken);
    await expect(client.auth.profile()).resolves.toMatchObject({ id: login.user.id, email: 'alice@halo.local', role: 'user' });
  });

  it('wrong credentials: HaloApiError 401 with the contract message and a request id', async () => {
    const { client } = sdk();
    const err = (await client.auth.login({ email: ALICE[0], password: 'wrong' }).catch((e: unknown) => e)) as HaloApiError;
    expect(err).toBeInstanceOf(HaloApiError);
    expect(err).toMatchObject({ status: 401, message: 'Email atau password salah' });
    expect(err.requestId).toBeTruthy();
  });

  it('refreshes through the cookie jar: the refresh cookie rotates and the new token works', async () => {
    const { client, calls } = await signedIn(...ALICE);
    const cookie = client.cookieJar!.header(`${url}/auth/refresh`);
    expect(cookie).toMatch(/^refresh_token=[0-9a-f-]{36}$/);
    expect(client.cookieJar!.header(`${url}/profile`)).toBeNull();
    await client.auth.refresh();
    const rotated = client.cookieJar!.header(`${url}/auth/refresh`);
    expect(rotated).toMatch(/^refresh_token=/);
    expect(rotated).not.toEqual(cookie);
    await client.auth.refresh(); // the rotated cookie is the one sent: the session survives
    await expect(client.auth.profile()).resolves.toMatchObject({ email: 'alice@halo.local' });
    expect(calls.filter((c) => c.path === '/auth/refresh')).toHaveLength(2);
  });

  it('a refused token is renewed once for 10 concurrent requests (auth revokes a session whose cookie is reused)', async () => {
    const { client, calls } = await signedIn(...ALICE);
    client.setAccessToken('not-a-valid-token');
    const profiles = await Promise.all(Array.from({ length: 10 }, () => client.auth.profile()));
    expect(profiles.every((p) => p.email === 'alice@halo.local')).toBe(true);
    expect(calls.filter((c) => c.path === '/auth/refresh')).toHaveLength(1);
    // The session is still alive: a second renewal works too.
    await expect(client.auth.refresh()).resolves.toEqual(expect.any(String));
  });

  it('after logout, a refused token ends in SignedOutError and the token is cleared', async () => {
    const { client } = await signedIn(...ALICE);
    await client.auth.logout();
    expect(client.accessToken).toBeNull();
    client.setAccessToken('expired-or-bogus');
    await expect(client.auth.profile()).rejects.toBeInstanceOf(SignedOutError);
    expect(client.accessToken).toBeNull();
  });
});

describe('content and products', () => {
  it('hello, greet, posts', async () => {
    const { client } = sdk();
    await expect(client.content.hello()).resolves.toEqual({ message: 'Halo Dunia!' });
    await expect(client.content.greet('Budi')).resolves.toEqual({ message: 'Halo, Budi!' });
    const posts = await client.content.postsOfUser(2);
    expect(posts.length).toBeGreaterThan(0);
    const post = await client.content.post(posts[0]!.id);
    expect(post.author).toMatchObject({ id: 2 });
    await expect(client.content.comments(posts[0]!.id)).resolves.toEqual(post.comments);
    await expect(client.content.post(999_999)).rejects.toMatchObject({ name: 'HaloApiError', status: 404, message: 'Not found' });
  });

  it('lists with page/limit/category/sort/order, gets one, in v1 and v2', async () => {
    const notices: DeprecationNotice[] = [];
    const { client } = sdk({ onDeprecation: (n) => notices.push(n) });
    const page = await client.products.list({ page: 1, limit: 5, category: 'books', sort: 'price', order: 'desc' });
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data.length).toBeLessThanOrEqual(5);
    expect(page.meta).toMatchObject({ page: 1, limit: 5, hasPrev: false });
    expect(page.data.every((p) => p.category === 'books')).toBe(true);
    const prices = page.data.map((p) => p.price);
    expect(prices).toEqual([...prices].sort((a, b) => b - a));
    const one = await client.products.get(page.data[0]!.id);
    expect(one).toEqual(page.data[0]);
    const v2 = await client.productsV2.get(one.id);
    expect(v2.price_cents).toBe(Math.round(one.price * 100));
    expect(notices.length).toBeGreaterThan(0); // v1 is deprecated
    expect(notices[0]!.sunset).toEqual(expect.any(String));
    await expect(client.products.list({ sort: 'colour' as 'price' })).rejects.toMatchObject({ status: 400, message: 'Invalid sort' });
  });

  it('an admin creates, updates and deletes a product (v2 money in cents)', async () => {
    const { client } = await signedIn(...ADMIN);
    const created = await client.productsV2.create({ name: `SDK ${Date.now()}`, category: 'games', price_cents: 1999 });
    expect(created).toMatchObject({ category: 'games', price_cents: 1999 });
    await expect(client.products.update(created.id, { price: 12.5 })).resolves.toMatchObject({ id: created.id, price: 12.5 });
    await client.productsV2.delete(created.id);
    await expect(client.products.get(created.id)).rejects.toMatchObject({ status: 404 });
    const { client: alice } = await signedIn(...ALICE);
    await expect(alice.products.create({ name: 'x', category: 'games', price: 1 })).rejects.toMatchObject({
      status: 403,
      message: 'Forbidden',
    });
  });
});

describe('payments and orders', () => {
  it('a payment sent again with the same key is the same payment (replayed)', async () => {
    const { client } = await signedIn(...ALICE);
    const first = await client.payments.create({ amount: 12.34 });
    expect(first).toMatchObject({ replayed: false, payment: { amount: 12.34, status: 'succeeded' } });
    const again = await client.payments.create({ amount: 12.34 }, { idempotencyKey: first.idempotencyKey });
    expect(again.replayed).toBe(true);
    expect(again.payment).toEqual(first.payment);
    await expect(client.payments.get(first.payment.id)).resolves.toEqual(first.payment);
    const other = await client.payments.create({ amount: 12.34 });
    expect(other.payment.id).not.toBe(first.payment.id);
  });

  it('an answer lost on the way back: the SDK retries with the same key and gets the one payment made', async () => {
    let firstAnswer: unknown;
    const { client, calls } = await signedIn(...ALICE, {
      tamper: async (call, res) => {
        if (call.path !== '/api/payments' || firstAnswer !== undefined) return res;
        firstAnswer = await res.json(); // the server charged it; the client never hears
        throw new TypeError('fetch failed');
      },
    });
    const result = await client.payments.create({ amount: 7.5 });
    expect(calls.filter((c) => c.path === '/api/payments')).toHaveLength(2);
    expect(result.replayed).toBe(true);
    expect({ data: result.payment }).toEqual(firstAnswer);
  }, 20_000);

  it('a concurrent duplicate gets 409 "Request in progress", waits out its Retry-After, and gets the same payment', async () => {
    const answers: { status: number; retryAfter: string | null }[] = [];
    const { client } = await signedIn(...ALICE, {
      tamper: (call, res) => {
        if (call.path === '/api/payments') answers.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
        return res;
      },
    });
    const key = crypto.randomUUID();
    const started = Date.now();
    const [a, b] = await Promise.all([
      client.payments.create({ amount: 3.21 }, { idempotencyKey: key }),
      client.payments.create({ amount: 3.21 }, { idempotencyKey: key }),
    ]);
    expect(a.payment).toEqual(b.payment);
    expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
    const conflict = answers.find((r) => r.status === 409)!;
    expect(conflict).toBeDefined();
    // Waited Retry-After (the lock's remaining time, ~3 s), not the 1 s backoff.
    expect(Number(conflict.retryAfter)).toBeGreaterThanOrEqual(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual((Number(conflict.retryAfter) - 1) * 1000);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 409]);
  }, 30_000);

  it('orders are idempotent by client_order_id', async () => {
    const { client } = await signedIn(...ALICE);
    const clientOrderId = `sdk-${Date.now()}`;
    const first = await client.orders.create({ product_id: 1, client_order_id: clientOrderId });
    expect(first).toMatchObject({ created: true, order: { product_id: 1, client_order_id: clientOrderId } });
    const again = await client.orders.create({ product_id: 1, client_order_id: clientOrderId });
    expect(again).toEqual({ created: false, order: first.order });
    await expect(client.orders.get(first.order.id)).resolves.toEqual(first.order);
    expect((await client.orders.list()).map((o) => o.id)).toContain(first.order.id);
    await expect(client.orders.create({ product_id: 999_999 })).rejects.toMatchObject({ status: 404, message: 'Product not found' });
  });
});

describe('GraphQL through the gateway', () => {
  it('persisted query: the first call misses and registers, the second is one request by hash', async () => {
    const { client, calls } = sdk();
    // A query nobody registered yet on this gateway.
    const Q = typed<{ product: { name: string } }, { id: string }>(`query SdkApq${Date.now()}($id: ID!) { product(id: $id) { name } }`);
    const first = await client.graphql.query(Q, { id: '1' });
    const graphqlCalls = () => calls.filter((c) => c.path.startsWith('/graphql'));
    expect(graphqlCalls()).toHaveLength(2);
    expect(JSON.parse(graphqlCalls()[0]!.body!)).not.toHaveProperty('query');
    expect(JSON.parse(graphqlCalls()[1]!.body!)).toHaveProperty('query');
    const second = await client.graphql.query(Q, { id: '1' });
    expect(second).toEqual(first);
    expect(graphqlCalls()).toHaveLength(3);
    expect(JSON.parse(graphqlCalls()[2]!.body!)).not.toHaveProperty('query');
  });

  it('persisted query over GET: the hit is cacheable (Cache-Control from the schema hints)', async () => {
    const { client, calls } = sdk({ graphql: { getForQueries: true } });
    const Q = `query SdkGet${Date.now()} { product(id: "2") { name } }`;
    await client.graphql.query(Q);
    const hit = await client.graphql.execute('query', { query: Q });
    expect(hit.result.errors).toBeUndefined();
    expect(hit.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(calls.filter((c) => c.path.startsWith('/graphql')).map((c) => c.method)).toEqual(['GET', 'POST', 'GET']);
  });

  it('a GraphQL error surfaces its extensions.code', async () => {
    const { client } = sdk();
    const err = (await client.graphql.query('{ user(id: "999") { name } }').catch((e: unknown) => e)) as GraphQLRequestError;
    expect(err).toBeInstanceOf(GraphQLRequestError);
    expect(err.codes).toEqual(['NOT_FOUND']);
    expect(err.data).toEqual({ user: null });
    const deep = '{ users { posts { author { posts { author { posts { author { name } } } } } } } }'; // depth 8
    await expect(client.graphql.query(deep)).rejects.toMatchObject({ status: 400, codes: ['MAX_DEPTH_LIMIT'] });
    await expect(client.graphql.query('{ me { id } }')).rejects.toMatchObject({ status: 401, codes: ['UNAUTHENTICATED'] });
  });

  it('batching: array in, array out, in order', async () => {
    const { client } = sdk();
    const results = await client.graphql.batch([
      { query: '{ user(id: "2") { name } }' },
      { query: 'query($id: ID!) { product(id: $id) { id } }', variables: { id: '3' } },
      { query: '{ user(id: "999") { name } }' },
    ]);
    expect(results[0]).toEqual({ data: { user: { name: 'Alice' } } });
    expect(results[1]).toEqual({ data: { product: { id: '3' } } });
    expect(results[2]!.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('a signed-in query and mutation', async () => {
    const { client } = await signedIn(...ALICE);
    await expect(client.graphql.query<{ me: { email: string } }>('{ me { email } }')).resolves.toEqual({
      me: { email: 'alice@halo.local' },
    });
    const chatId = `sdk-m-${Date.now()}`;
    const sent = await client.graphql.mutate<{ sendMessage: { chatId: string; text: string } }>(
      'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { chatId text } }',
      { c: chatId, t: 'halo' },
    );
    expect(sent.sendMessage).toEqual({ chatId, text: 'halo' });
  });
});

describe('subscriptions through the gateway', () => {
  const NEW = typed<{ newMessage: { id: string; chatId: string; text: string; author: { name: string } } }, { c: string }>(
    'subscription($c: ID!) { newMessage(chatId: $c) { id chatId text author { name } } }',
  );
  const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }';

  interface Stream {
    events: GraphQLResult<{ newMessage: { text: string; author: { name: string } } }>[];
    errors: unknown[];
    stop: () => void;
  }

  function listen(client: HaloClient, chatId: string): Stream {
    const s: Stream = { events: [], errors: [], stop: () => undefined };
    s.stop = client.graphql.subscribe(NEW, { c: chatId }, { next: (r) => void s.events.push(r), error: (e) => void s.errors.push(e) });
    return s;
  }

  async function until(what: string, ok: () => boolean, timeoutMs = 15_000) {
    const end = Date.now() + timeoutMs;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /**
   * A subscription hears only what is sent after it is live upstream, and graphql-ws does not say
   * when that is: probes are sent (through the SDK, tolerating a gateway that is still coming
   * back) until one arrives.
   */
  async function live(client: HaloClient, s: Stream, chatId: string, timeoutMs = 30_000) {
    const end = Date.now() + timeoutMs;
    for (let i = 0; ; i++) {
      if (Date.now() > end) throw new Error(`subscription on ${chatId} never became live: ${String(s.errors)}`);
      const probe = `probe ${i} ${Math.random()}`;
      const sent = await client.graphql.mutate(SEND, { c: chatId, t: probe }).then(
        () => true,
        () => false,
      );
      if (!sent) {
        await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      const deadline = Date.now() + 500;
      while (Date.now() < deadline && !s.events.some((e) => e.data?.newMessage.text === probe)) await new Promise((r) => setTimeout(r, 20));
      if (s.events.some((e) => e.data?.newMessage.text === probe)) return;
    }
  }

  it('newMessage receives a message sent through the SDK', async () => {
    const { client } = await signedIn(...ALICE);
    const chatId = `sdk-sub-${Date.now()}`;
    const s = listen(client, chatId);
    await live(client, s, chatId);
    await client.graphql.mutate(SEND, { c: chatId, t: 'halo dari SDK' });
    await until('the message', () => s.events.some((e) => e.data?.newMessage.text === 'halo dari SDK'));
    const event = s.events.find((e) => e.data?.newMessage.text === 'halo dari SDK')!;
    expect(event.data!.newMessage.author.name).toBe('Alice');
    expect(s.errors).toEqual([]);
    s.stop();
  }, 60_000);

  it('a refused token on the socket (4401) is renewed with the refresh cookie, and the subscription works', async () => {
    const { client, calls } = await signedIn(...ALICE);
    client.setAccessToken('not-a-valid-token');
    const chatId = `sdk-4401-${Date.now()}`;
    const s = listen(client, chatId);
    await until('the renewal', () => calls.some((c) => c.path === '/auth/refresh'));
    await live(client, s, chatId);
    expect(calls.filter((c) => c.path === '/auth/refresh')).toHaveLength(1);
    expect(s.errors).toEqual([]);
    s.stop();
  }, 60_000);

  it('a token expiring while subscribed (4401 "Token expired") is renewed and the subscription goes on', async () => {
    const closes: number[] = [];
    const { client, calls } = await signedIn(...ALICE, {
      subscriptions: { webSocketImpl: WebSocket, onClosed: (e) => void closes.push((e as { code: number }).code) },
    });
    const me = await client.auth.profile();
    // The same user's token, as auth would sign it, but living 3 s: the gateway closes the socket when it expires.
    client.setAccessToken(signAccessToken({ sub: String(me.id), name: me.name, role: me.role }, TEST_JWT_SECRET, 3));
    const chatId = `sdk-exp-${Date.now()}`;
    const s = listen(client, chatId);
    await live(client, s, chatId);
    expect(calls.filter((c) => c.path === '/auth/refresh')).toHaveLength(0);
    await until('the expiry close', () => closes.includes(4401), 10_000);
    await until('the renewal', () => calls.some((c) => c.path === '/auth/refresh'));
    await live(client, s, chatId);
    await client.graphql.mutate(SEND, { c: chatId, t: 'after the expiry' });
    await until('the message', () => s.events.some((e) => e.data?.newMessage.text === 'after the expiry'));
    expect(s.errors).toEqual([]);
    expect(calls.filter((c) => c.path === '/auth/refresh')).toHaveLength(1);
    s.stop();
  }, 60_000);

  it('after the gateway process is killed and restarted, the SDK reconnects and receives the next message', async () => {
    const reconnects: boolean[] = [];
    const { client } = await signedIn(...ALICE, {
      subscriptions: { webSocketImpl: WebSocket, onConnected: (again) => void reconnects.push(again) },
    });
    const chatId = `sdk-kill-${Date.now()}`;
    const s = listen(client, chatId);
    await live(client, s, chatId);

    const gateway = sys.system.processes.find((p) => p.name === 'gateway')!;
    const before = gateway.child.pid;
    gateway.child.kill('SIGKILL');
    await until('the launcher to restart the gateway', () => gateway.child.pid !== before, 30_000);

    await live(client, s, chatId, 60_000); // reconnected and resubscribed by itself
    await client.graphql.mutate(SEND, { c: chatId, t: 'after the restart' });
    await until('the next message', () => s.events.some((e) => e.data?.newMessage.text === 'after the restart'));
    expect(s.errors).toEqual([]);
    expect(reconnects).toEqual([false, true]); // one socket before the kill, one reconnect after it
    s.stop();
  }, 120_000);
});
