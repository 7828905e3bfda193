import {
  AS,
  bearer,
  gql,
  MESSAGES,
  send,
  SEND,
  startTestChat,
  subscribe,
  subscriptionsOpen,
  until,
  wsClient,
  type MessageView,
  type TestChat,
} from './helpers';

/**
 * chat's subgraph over HTTP, called as the gateway calls it, on a service without REDIS_URL (the
 * embedded mode: the in-process pub/sub, one replica): sendMessage, messages paging newest first,
 * who may call what, the validation answers, and entity references.
 */
let t: TestChat;

beforeAll(async () => {
  t = await startTestChat();
});

afterAll(async () => {
  await t?.close();
});

interface Page {
  edges: { cursor: string; node: { id: string; text: string; author: { id: string } } }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}
const page = async (chatId: string, args: { first?: number; after?: string | null } = {}, as = 1) => {
  const res = await gql<{ messages: Page }>(t.base, MESSAGES, { chatId, ...args }, AS(as));
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data!.messages;
};

describe('sendMessage', () => {
  it('stores the message (trimmed) and answers it; the chat comes into being with it', async () => {
    const res = await gql(t.base, SEND, { chatId: '  first-chat ', text: '  Halo, dunia!  ' }, AS(42));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        sendMessage: {
          id: expect.stringMatching(/^\d+$/),
          chatId: 'first-chat',
          text: 'Halo, dunia!',
          createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
          author: { id: '42' },
        },
      },
    });
    const { rows } = await t.db.query<{ id: string }>('SELECT id FROM chats');
    expect(rows).toEqual([{ id: 'first-chat' }]);
  });

  it.each([
    ['an empty chatId', { chatId: '', text: 'x' }, 'chatId is required'],
    ['a blank chatId', { chatId: '   ', text: 'x' }, 'chatId is required'],
    ['a 65-character chatId', { chatId: 'c'.repeat(65), text: 'x' }, 'chatId must be at most 64 characters'],
    ['an empty text', { chatId: 'ok', text: '' }, 'text is required'],
    ['a blank text', { chatId: 'ok', text: ' \n\t ' }, 'text is required'],
    ['a 2001-character text', { chatId: 'ok', text: 't'.repeat(2001) }, 'text must be at most 2000 characters'],
    ['a NUL in the text', { chatId: 'ok', text: 'a\u0000b' }, 'text must not contain NUL characters'],
    ['a NUL in the chatId', { chatId: 'a\u0000b', text: 'x' }, 'chatId must not contain NUL characters'],
  ])('%s → BAD_USER_INPUT, nothing stored', async (_label, vars, message) => {
    const before = (await t.db.query('SELECT count(*)::int AS n FROM messages')).rows[0];
    const res = await gql(t.base, SEND, vars, AS(1));
    expect(res.body).toEqual({
      data: { sendMessage: null },
      errors: [expect.objectContaining({ message, path: ['sendMessage'], extensions: { code: 'BAD_USER_INPUT' } })],
    });
    expect((await t.db.query('SELECT count(*)::int AS n FROM messages')).rows[0]).toEqual(before);
  });

  it('takes the longest allowed: a 64-character chat id, 2000 characters of text', async () => {
    const m = await send(t.base, 'c'.repeat(64), 't'.repeat(2000));
    expect(m.chatId).toHaveLength(64);
    expect(m.text).toHaveLength(2000);
  });

  it('needs a caller: anonymous → UNAUTHENTICATED `Token required` (before any validation); a bad token → HTTP 401', async () => {
    const anonymous = await gql(t.base, SEND, { chatId: '', text: '' });
    expect(anonymous.body.errors).toEqual([
      expect.objectContaining({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } }),
    ]);
    const bad = await gql(t.base, SEND, { chatId: 'x', text: 'y' }, { authorization: 'Bearer nope' });
    expect(bad.status).toBe(401);
    expect(bad.body.errors![0]).toMatchObject({ message: 'Invalid token', extensions: { code: 'UNAUTHENTICATED' } });
  });
});

describe('messages', () => {
  let sent: MessageView[];
  beforeAll(async () => {
    sent = [];
    for (let i = 0; i < 25; i++) sent.push(await send(t.base, 'paging', `m${i}`, 1 + (i % 3)));
    await send(t.base, 'elsewhere', 'not in paging');
  });

  it('pages newest first: 20 by default, then the rest after the end cursor; every cursor continues from its edge', async () => {
    const newest = [...sent].reverse();
    const first = await page('paging');
    expect(first.edges.map((e) => e.node.text)).toEqual(newest.slice(0, 20).map((m) => m.text));
    expect(first.edges[0]!.node).toEqual({ id: newest[0]!.id, text: 'm24', author: { id: newest[0]!.author!.id } });
    expect(first.pageInfo).toEqual({ hasNextPage: true, endCursor: first.edges[19]!.cursor });
    const rest = await page('paging', { after: first.pageInfo.endCursor });
    expect(rest.edges.map((e) => e.node.text)).toEqual(['m4', 'm3', 'm2', 'm1', 'm0']);
    expect(rest.pageInfo).toEqual({ hasNextPage: false, endCursor: rest.edges[4]!.cursor });
    const fromMiddle = await page('paging', { first: 2, after: first.edges[9]!.cursor });
    expect(fromMiddle.edges.map((e) => e.node.text)).toEqual(['m14', 'm13']);
    expect(fromMiddle.pageInfo.hasNextPage).toBe(true);
  });

  it('first: up to 100 (then all 25 here), 0 is an empty page; more than 100 or a foreign cursor → BAD_USER_INPUT', async () => {
    expect((await page('paging', { first: 100 })).edges).toHaveLength(25);
    expect(await page('paging', { first: 0 })).toEqual({ edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
    const tooMany = await gql(t.base, MESSAGES, { chatId: 'paging', first: 101 }, AS(1));
    expect(tooMany.body.errors![0]).toMatchObject({ message: 'first must be between 0 and 100', extensions: { code: 'BAD_USER_INPUT' } });
    const badCursor = await gql(t.base, MESSAGES, { chatId: 'paging', after: 'bm90LWEtY3Vyc29y' }, AS(1));
    expect(badCursor.body.errors![0]).toMatchObject({ message: 'Invalid cursor', extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('a chat nobody wrote to is an empty connection; anonymous callers get UNAUTHENTICATED', async () => {
    expect(await page('never-written')).toEqual({ edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
    const anonymous = await gql(t.base, MESSAGES, { chatId: 'paging' });
    expect(anonymous.body).toEqual({
      data: null,
      errors: [expect.objectContaining({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } })],
    });
  });

  it('Message entity references: one statement for any number of them; null for unknown ids and for anonymous callers', async () => {
    const query = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Message { id chatId text author { id } } } }`;
    const reps = (ids: string[]) => ids.map((id) => ({ __typename: 'Message', id }));
    const before = t.db.stats.queries;
    const res = await gql(t.base, query, { reps: reps([...sent.map((m) => m.id), '999999']) }, AS(9));
    expect(t.db.stats.queries - before).toBe(1);
    expect(res.body.data!._entities).toEqual([...sent.map((m) => ({ id: m.id, chatId: 'paging', text: m.text, author: m.author })), null]);
    expect((await gql(t.base, query, { reps: reps([sent[0]!.id]) })).body.data!._entities).toEqual([null]);
  });

  it("a private chat's Message entity is null for a non-member, as for an unknown id", async () => {
    // No member ids: nothing to ask content.
    const created = await gql<{ createChat: { id: string } }>(t.base, 'mutation { createChat(memberIds: []) { id } }', {}, AS(21));
    const chatId = created.body.data!.createChat.id;
    const m = await send(t.base, chatId, 'members only', 21);
    const query = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Message { id text } } }`;
    const reps = [{ __typename: 'Message', id: m.id }];
    expect((await gql(t.base, query, { reps }, AS(21))).body.data!._entities).toEqual([{ id: m.id, text: 'members only' }]);
    expect((await gql(t.base, query, { reps }, AS(22))).body.data!._entities).toEqual([null]);
  });
});

describe('without REDIS_URL (the embedded mode)', () => {
  it('delivers in this process: newMessage subscribers of the chat get each message, in order', async () => {
    const c = wsClient(t.base, { authorization: bearer(5) });
    try {
      const subs = [subscribe(c.client, 'local'), subscribe(c.client, 'local'), subscribe(c.client, 'not-local')];
      await subscriptionsOpen(t.base, 3);
      const sent = [await send(t.base, 'local', 'one'), await send(t.base, 'local', 'two')];
      await until('both subscribers', () => subs[0]!.events.length === 2 && subs[1]!.events.length === 2);
      expect(subs.map((s) => s.events)).toEqual([sent, sent, []]);
      expect((await fetch(`${t.base}/readyz`)).status).toBe(200);
    } finally {
      await c.dispose();
    }
    await subscriptionsOpen(t.base, 0);
  });
});
