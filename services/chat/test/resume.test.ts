import {
  bearer,
  gql,
  messageRows,
  RESUME,
  send,
  startReplica,
  startTestChat,
  subscribe,
  subscriptionsOpen,
  TEST_REDIS_URL,
  until,
  wsClient,
  type MessageView,
  type TestChat,
} from './helpers';

/**
 * `newMessage(chatId, after)` on two replicas sharing Postgres and Redis: the history after a
 * message from the database, then the live messages, each once, whichever replica sent them.
 */
let a: TestChat;
let b: Awaited<ReturnType<typeof startReplica>>;
const clients: { dispose(): unknown }[] = [];
const client = (base: string, user = 1) => {
  const c = wsClient(base, { authorization: bearer(user) });
  clients.push(c);
  return c.client;
};

beforeAll(async () => {
  a = await startTestChat({ REDIS_URL: TEST_REDIS_URL });
  b = await startReplica(a, { REDIS_URL: TEST_REDIS_URL });
});

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  await b?.stop();
  await a?.close();
});

const ids = (events: MessageView[]) => events.map((e) => Number(e.id));

it('a subscriber away while 50 messages are sent resumes after its last one: exactly those 50, then live ones', async () => {
  const first = await send(a.base, 'away', 'before', 2);
  const missed: MessageView[] = [];
  for (let i = 0; i < 50; i++) missed.push(await send(i % 2 ? a.base : b.base, 'away', `missed ${i}`, 3));
  const resumed = subscribe(client(a.base), 'away', RESUME, { after: first.id });
  await until('the 50 missed', () => resumed.events.length === 50);
  expect(resumed.events).toEqual(missed);
  const live = [await send(b.base, 'away', 'live 1', 2), await send(a.base, 'away', 'live 2', 2)];
  await until('two live ones', () => resumed.events.length === 52);
  expect(resumed.events.slice(50)).toEqual(live);
  expect(resumed.error).toBeUndefined();
  resumed.unsubscribe();
});

it('the seam under concurrent sends through both replicas: no gap, no duplicate, id order', async () => {
  const start = await send(a.base, 'seam', 'start', 2);
  let sending = true;
  const senders = [a.base, b.base].map(async (base, n) => {
    for (let i = 0; sending; i++) await send(base, 'seam', `s${n}-${i}`, 2 + n);
  });
  await until('some history', async () => (await messageRows(a.db)).filter((r) => r.chat_id === 'seam').length > 30);
  // Resume on both replicas while the senders run: some messages are replayed, some live, some both.
  const subs = [
    subscribe(client(a.base), 'seam', RESUME, { after: start.id }),
    subscribe(client(b.base), 'seam', RESUME, { after: start.id }),
  ];
  await subscriptionsOpen(a.base, 1);
  await subscriptionsOpen(b.base, 1);
  await until('messages after the resume', async () => subs.every((s) => s.events.length > 60));
  sending = false;
  await Promise.all(senders);
  const expected = (await messageRows(a.db)).filter((r) => r.chat_id === 'seam' && r.id > Number(start.id)).map((r) => r.id);
  for (const s of subs) {
    await until('every message', () => s.events.length >= expected.length);
    expect(ids(s.events)).toEqual(expected);
    expect(s.error).toBeUndefined();
    s.unsubscribe();
  }
});

it('bad `after`: another chat’s message, an unknown id or not an id → BAD_USER_INPUT, nothing subscribed', async () => {
  const elsewhere = await send(a.base, 'elsewhere', 'x', 2);
  const c = client(a.base);
  const cases: [unknown, string][] = [
    [elsewhere.id, 'after is not a message of this chat'],
    ['999999999', 'after is not a message of this chat'],
    ['abc', 'Invalid id'],
    ['0', 'Invalid id'],
  ];
  for (const [after, message] of cases) {
    const sub = subscribe(c, 'bad-after', RESUME, { after });
    await until('the refusal', () => sub.error !== undefined);
    expect(sub.error).toEqual([expect.objectContaining({ message, extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) })]);
  }
  await subscriptionsOpen(a.base, 0);
});

it('at most 1000 replayed: 1000 behind is delivered, 1001 is REPLAY_TOO_LONG', async () => {
  const first = await send(a.base, 'long', 'first', 2);
  // The history, written straight into the table (the send path is tested above).
  await a.db.query(`INSERT INTO messages (chat_id, author_id, text) SELECT 'long', 2, 'bulk ' || n FROM generate_series(1, 1000) n`);
  const full = subscribe(client(a.base), 'long', RESUME, { after: first.id });
  await until('1000 replayed', () => full.events.length === 1000, 15_000);
  expect(full.events[999]!.text).toBe('bulk 1000');
  await send(b.base, 'long', 'one more', 2);
  const behind = subscribe(client(a.base), 'long', RESUME, { after: first.id });
  await until('the refusal', () => behind.error !== undefined);
  expect(behind.error).toEqual([
    expect.objectContaining({ extensions: expect.objectContaining({ code: 'REPLAY_TOO_LONG', maxReplay: 1000 }) }),
  ]);
  // Reading the gap with `messages` and resuming after its newest is what a client does then.
  const page = await gql<{ messages: { edges: { node: { id: string } }[] } }>(
    a.base,
    'query { messages(chatId: "long", first: 1) { edges { node { id } } } }',
    {},
    { authorization: bearer(1) },
  );
  const caughtUp = subscribe(client(a.base), 'long', RESUME, { after: page.body.data!.messages.edges[0]!.node.id });
  await subscriptionsOpen(a.base, 2);
  const next = await send(b.base, 'long', 'after catching up', 2);
  await until('the live one', () => caughtUp.events.length === 1);
  expect(caughtUp.events).toEqual([next]);
});
