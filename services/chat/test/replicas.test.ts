import {
  bearer,
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
 * Two replicas of chat — two HTTP servers, two WebSocket servers, two pairs of Redis connections —
 * on one schema and one Redis namespace, as two pods are: a message sent through one reaches the
 * subscribers of the other, and concurrent sends through both are seen by every subscriber in one
 * order, the order of their ids (what `messages` pages by).
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

it('a message sent through replica B reaches a subscriber on replica A, in order', async () => {
  const onA = subscribe(client(a.base), 'across');
  await subscriptionsOpen(a.base, 1);
  const sent: MessageView[] = [];
  for (let i = 0; i < 5; i++) sent.push(await send(b.base, 'across', `via B ${i}`, 2));
  await until('five events on A', () => onA.events.length === 5);
  expect(onA.events).toEqual(sent);
  onA.unsubscribe();
  await subscriptionsOpen(a.base, 0);
});

it('concurrent sends from several clients through both replicas: every subscriber sees all of them once, in one order, the id order', async () => {
  const subscribers = [
    subscribe(client(a.base, 11), 'busy'),
    subscribe(client(a.base, 12), 'busy'),
    subscribe(client(b.base, 13), 'busy'),
    subscribe(client(b.base, 14), 'busy'),
  ];
  const quiet = subscribe(client(b.base, 15), 'quiet');
  await subscriptionsOpen(a.base, 2);
  await subscriptionsOpen(b.base, 3);

  // 6 senders × 10 messages, all in flight at once, alternating between the replicas.
  const senders = Array.from({ length: 6 }, (_, s) => s + 1);
  const sent = await Promise.all(
    senders.flatMap((s) => Array.from({ length: 10 }, (_, i) => send(i % 2 === 0 ? a.base : b.base, 'busy', `sender ${s} #${i}`, s))),
  );
  // A last message after all of them: once every subscriber has it, nothing else is on its way.
  const last = await send(a.base, 'busy', 'the end', 1);
  await until('every subscriber has everything', () => subscribers.every((s) => s.events.at(-1)?.id === last.id), 10_000);

  const idOrder = [...sent, last].map((m) => Number(m.id)).sort((x, y) => x - y);
  const { rows } = await a.db.query<{ id: number }>(`SELECT id FROM messages WHERE chat_id = 'busy' ORDER BY id`);
  expect(rows.map((r) => r.id)).toEqual(idOrder);
  for (const s of subscribers) {
    expect(ids(s.events)).toEqual(idOrder);
    expect(s.error).toBeUndefined();
  }
  // Each subscriber saw the same messages, whole (not only the same ids).
  for (const s of subscribers.slice(1)) expect(s.events).toEqual(subscribers[0]!.events);
  expect(quiet.events).toEqual([]);
});
