import {
  AS,
  CLOSED_REDIS_URL,
  bearer,
  gql,
  MESSAGES,
  messageRows,
  SEND,
  startTestChat,
  subscribe,
  until,
  wsClient,
  type TestChat,
} from './helpers';

/**
 * Redis unreachable (an address where nothing listens, so the shared server keeps running for the
 * other test files): a message that cannot be delivered is not stored either — sendMessage answers
 * SERVICE_UNAVAILABLE and writes nothing — new subscriptions are refused the same way, reading
 * still works, and readiness fails.
 */
let t: TestChat;

beforeAll(async () => {
  t = await startTestChat({ REDIS_URL: CLOSED_REDIS_URL });
});

afterAll(async () => {
  await t?.close();
});

it('sendMessage → SERVICE_UNAVAILABLE, nothing written (no message, no chat)', async () => {
  for (let i = 0; i < 3; i++) {
    const res = await gql(t.base, SEND, { chatId: 'down', text: `hello ${i}` }, AS(1));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ sendMessage: null });
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message: 'Message delivery unavailable',
        path: ['sendMessage'],
        extensions: { code: 'SERVICE_UNAVAILABLE' },
      }),
    ]);
  }
  expect(await messageRows(t.db)).toEqual([]);
  expect((await t.db.query('SELECT id FROM chats')).rows).toEqual([]);
});

it('checks that need no Redis still answer first: 401, then 400', async () => {
  expect((await gql(t.base, SEND, { chatId: 'down', text: 'x' })).body.errors![0]).toMatchObject({
    extensions: { code: 'UNAUTHENTICATED' },
  });
  expect((await gql(t.base, SEND, { chatId: 'down', text: ' ' }, AS(1))).body.errors![0]).toMatchObject({
    message: 'text is required',
    extensions: { code: 'BAD_USER_INPUT' },
  });
});

it('newMessage is refused with an error message (SERVICE_UNAVAILABLE), the socket stays open', async () => {
  const c = wsClient(t.base, { authorization: bearer(1) });
  try {
    const sub = subscribe(c.client, 'down');
    await until('the error', () => sub.error !== undefined);
    expect(sub.error).toEqual([
      expect.objectContaining({ message: 'Message delivery unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } }),
    ]);
    expect(c.closes.filter((x) => x.code !== 1000)).toEqual([]);
  } finally {
    await c.dispose();
  }
});

it('reading needs no Redis: messages answers (an empty connection)', async () => {
  const res = await gql(t.base, MESSAGES, { chatId: 'down' }, AS(1));
  expect(res.body).toEqual({ data: { messages: { edges: [], pageInfo: { hasNextPage: false, endCursor: null } } } });
});

it('/readyz fails while Redis is down (a load balancer stops sending here); /healthz stays up', async () => {
  expect((await fetch(`${t.base}/readyz`)).status).toBe(503);
  expect((await fetch(`${t.base}/healthz`)).status).toBe(200);
});
