import { connect } from 'node:net';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import jwt from 'jsonwebtoken';
import WebSocket from 'ws';
import {
  AS,
  bearer,
  channelOf,
  gql,
  numsub,
  openSubscriptions,
  send,
  startReplica,
  startTestChat,
  subscribe,
  subscriptionsOpen,
  testRedis,
  TEST_REDIS_URL,
  until,
  wsClient,
  type TestChat,
} from './helpers';
import type { Redis } from '@halo/kit/db';

/**
 * newMessage over graphql-ws, straight to one chat service (its own HTTP port, `/graphql`), with
 * Redis as the pub/sub: who may subscribe, what a subscriber receives and in which order, what
 * unsubscribing releases, and how shutdown ends the sockets.
 */
let t: TestChat;
let redis: Redis;
const clients: { dispose(): unknown }[] = [];
const client = (params: Record<string, unknown> = { authorization: bearer(1) }, base = t.base) => {
  const c = wsClient(base, params);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  t = await startTestChat({ REDIS_URL: TEST_REDIS_URL });
  redis = await testRedis();
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  await subscriptionsOpen(t.base, 0);
});

afterAll(async () => {
  redis?.disconnect();
  await t?.close();
});

describe('who may connect and subscribe', () => {
  it('an invalid token closes the socket with 4401 Unauthorized; so does an expired one', async () => {
    const expired = jwt.sign({ sub: '1', name: 'u', role: 'user', iat: 1_000, exp: 2_000 }, TEST_JWT_SECRET, { algorithm: 'HS256' });
    for (const authorization of ['Bearer not-a-token', `Bearer ${expired}`, 42]) {
      const c = client({ authorization });
      const sub = subscribe(c.client, 'general');
      await until('the close', () => c.closes.length > 0);
      expect(c.closes).toEqual([{ code: 4401, reason: 'Unauthorized' }]);
      expect(sub.events).toEqual([]);
    }
  });

  it('an anonymous connection is accepted, but newMessage answers an error message: UNAUTHENTICATED, the HTTP text', async () => {
    const c = client({});
    const sub = subscribe(c.client, 'general');
    await until('the error', () => sub.error !== undefined);
    expect(sub.error).toEqual([
      { message: 'Token required', locations: [{ line: 1, column: 31 }], path: ['newMessage'], extensions: { code: 'UNAUTHENTICATED' } },
    ]);
    const http = await gql(t.base, 'mutation { sendMessage(chatId: "general", text: "hi") { id } }');
    expect(http.body.errors![0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
    // Not refused: the only close is the client's own, of its lazy connection with nothing left on it.
    expect(c.closes.filter((x) => x.code !== 1000)).toEqual([]);
  });

  it('a bad chatId is BAD_USER_INPUT with the domain’s message; an invalid document is an error message too', async () => {
    const c = client();
    const blank = subscribe(c.client, '   ');
    const long = subscribe(c.client, 'x'.repeat(65));
    const broken = subscribe(c.client, 'general', 'subscription { newMessage(chatId: "x") { nope } }');
    await until('three errors', () => [blank, long, broken].every((s) => s.error !== undefined));
    expect((blank.error as { message: string; extensions: unknown }[])[0]).toMatchObject({
      message: 'chatId is required',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    expect((long.error as { message: string }[])[0]).toMatchObject({
      message: 'chatId must be at most 64 characters',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    expect((broken.error as { message: string }[])[0]!.message).toMatch(/Cannot query field "nope"/);
  });

  it('upgrades to any other path are cut; HTTP POST /graphql keeps working beside the WebSocket', async () => {
    const raw = new WebSocket(`${t.base.replace('http', 'ws')}/other`, 'graphql-transport-ws');
    const outcome = await new Promise<string>((resolve) => {
      raw.once('open', () => resolve('open'));
      raw.once('error', (err) => resolve(err.message));
    });
    expect(outcome).toMatch(/socket hang up|ECONNRESET/);
    const http = await gql(
      t.base,
      'query { messages(chatId: "nobody-wrote-here") { edges { cursor } pageInfo { hasNextPage endCursor } } }',
      {},
      AS(1),
    );
    expect(http.body).toEqual({ data: { messages: { edges: [], pageInfo: { hasNextPage: false, endCursor: null } } } });
  });
});

describe('what a subscriber receives', () => {
  it('exactly the messages of its chat, in send order, each once and resolved like sendMessage’s answer; other chats’ subscribers get nothing', async () => {
    const c = client();
    const mine = subscribe(c.client, 'room-a');
    const other = subscribe(c.client, 'room-b');
    await subscriptionsOpen(t.base, 2);
    const sent = [];
    for (let i = 0; i < 10; i++) sent.push(await send(t.base, 'room-a', `message ${i}`, 7));
    await until('ten events', () => mine.events.length >= 10);
    expect(mine.events).toEqual(sent);
    expect(mine.events[0]).toEqual({
      id: expect.any(String),
      chatId: 'room-a',
      text: 'message 0',
      createdAt: expect.stringMatching(/Z$/),
      author: { id: '7' },
    });
    // A message to room-b afterwards: room-b's subscriber gets it, and nothing before it.
    const b = await send(t.base, 'room-b', 'only for b');
    await until('the room-b event', () => other.events.length > 0);
    expect(other.events).toEqual([b]);
    expect(mine.events).toHaveLength(10);
  });

  it('trims the chat id: a subscriber of " room-c " is a subscriber of "room-c"', async () => {
    const c = client();
    const sub = subscribe(c.client, ' room-c ');
    await subscriptionsOpen(t.base, 1);
    const m = await send(t.base, 'room-c', '  spaced  ');
    expect(m).toMatchObject({ chatId: 'room-c', text: 'spaced' });
    await until('the event', () => sub.events.length === 1);
    expect(sub.events).toEqual([m]);
  });

  it('unsubscribing releases the Redis subscription: after 100 subscribe/unsubscribe cycles NUMSUB is 0 and the gauge is back to 0', async () => {
    const c = client();
    const channel = channelOf(t.db, 'churn');
    for (let i = 0; i < 100; i++) {
      const sub = subscribe(c.client, 'churn');
      await subscriptionsOpen(t.base, 1);
      expect(await numsub(redis, channel)).toBe(1);
      sub.unsubscribe();
      await subscriptionsOpen(t.base, 0);
    }
    await until('NUMSUB 0', async () => (await numsub(redis, channel)) === 0);
    // Many subscribers of one chat on one replica share one Redis subscription.
    const subs = [subscribe(c.client, 'churn'), subscribe(c.client, 'churn'), subscribe(c.client, 'churn')];
    await subscriptionsOpen(t.base, 3);
    expect(await numsub(redis, channel)).toBe(1);
    const m = await send(t.base, 'churn', 'to all three');
    await until('three deliveries', () => subs.every((s) => s.events.length === 1));
    subs.forEach((s) => s.unsubscribe());
    await subscriptionsOpen(t.base, 0);
    await until('NUMSUB 0', async () => (await numsub(redis, channel)) === 0);
    expect(subs.map((s) => s.events)).toEqual([[m], [m], [m]]);
  });

  it('a closed socket ends its subscriptions as unsubscribing does', async () => {
    const c = client();
    subscribe(c.client, 'dropped');
    subscribe(c.client, 'dropped-2');
    await subscriptionsOpen(t.base, 2);
    await c.dispose();
    await subscriptionsOpen(t.base, 0);
    await until(
      'NUMSUB 0',
      async () => (await numsub(redis, channelOf(t.db, 'dropped'))) + (await numsub(redis, channelOf(t.db, 'dropped-2'))) === 0,
    );
  });
});

describe('shutdown', () => {
  it('closes every WebSocket with 1001 Going away, releases its Redis subscriptions and stops listening', async () => {
    const replica = await startReplica(t, { REDIS_URL: TEST_REDIS_URL });
    const c = client({ authorization: bearer(2) }, replica.base);
    const sub = subscribe(c.client, 'closing');
    await subscriptionsOpen(replica.base, 1);
    await replica.stop();
    expect(c.closes).toEqual([{ code: 1001, reason: 'Going away' }]);
    expect(sub.error).toMatchObject({ code: 1001 });
    // Nothing listens any more.
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(replica.service.httpPort, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(false)));
      socket.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    expect(await numsub(redis, channelOf(t.db, 'closing'))).toBe(0);
  });

  it('the gauge counts subscriptions, not sockets', async () => {
    const a = client();
    const b = client({ authorization: bearer(3) });
    subscribe(a.client, 'g1');
    subscribe(a.client, 'g2');
    subscribe(b.client, 'g1');
    await subscriptionsOpen(t.base, 3);
    expect(await openSubscriptions(t.base)).toBe(3);
  });
});
