import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { gql, startE2ESystem } from './helpers';

/**
 * Private chats through the gateway (docs/api/graphql.md "Private chats"): createChat with member
 * ids checked by content over gRPC, membership enforced on messages, sendMessage and newMessage,
 * the creator's and a member's removals, and a removed member's open subscription ended.
 * Seeded users: 1 Admin, 2 Alice, 3 Bob.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
let chat2: string;

beforeAll(async () => {
  // Two chat replicas sharing Redis: a removal made on one ends subscriptions held on the other.
  sys = await startE2ESystem({ postgres: true, extraChatReplica: true });
  gateway = sys.url;
  chat2 = sys.chatReplicaUrl!;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const token = (sub: string) => signAccessToken({ sub, name: `User ${sub}`, role: 'user' }, TEST_JWT_SECRET, 600);
const as = (sub: string) => ({ authorization: `Bearer ${token(sub)}` });
const ADMIN = '1';
const ALICE = '2';
const BOB = '3';

const CHAT = 'id title creator { id name } members { id }';
const CREATE = `mutation($t: String, $m: [ID!]!) { createChat(title: $t, memberIds: $m) { ${CHAT} } }`;
const ADD = `mutation($c: ID!, $m: [ID!]!) { addChatMembers(chatId: $c, memberIds: $m) { ${CHAT} } }`;
const REMOVE = `mutation($c: ID!, $u: ID!) { removeChatMember(chatId: $c, userId: $u) { ${CHAT} } }`;
const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id text } }';
const MESSAGES = 'query($c: ID!) { messages(chatId: $c) { edges { node { id text } } } }';
const CHATS =
  'query($f: Int, $a: String) { chats(first: $f, after: $a) { edges { node { id title } } pageInfo { hasNextPage endCursor } } }';
const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id text } }';

const codes = (body: { errors?: { extensions?: { code?: string } }[] }) => (body.errors ?? []).map((e) => e.extensions?.code);

async function create(by: string, memberIds: string[], title?: string) {
  const res = await gql(gateway, CREATE, { t: title, m: memberIds }, as(by));
  expect(res.body.errors).toBeUndefined();
  return res.body.data.createChat as { id: string; title: string | null; creator: { id: string; name: string }; members: { id: string }[] };
}

function ws(sub: string): Client {
  return createClient({
    url: `${gateway.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: as(sub),
    retryAttempts: 0,
  });
}

function listen(client: Client, chatId: string) {
  const s = { events: [] as { id: string; text: string }[], errors: [] as unknown[], done: false };
  client.subscribe<{ newMessage: { id: string; text: string } }>(
    { query: NEW, variables: { c: chatId } },
    {
      next: (r) => void (r.data ? s.events.push(r.data.newMessage) : s.errors.push(r.errors)),
      error: (e) => void s.errors.push(e),
      complete: () => void (s.done = true),
    },
  );
  return s;
}

async function until(what: string, ok: () => boolean, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('private chats', () => {
  it('createChat: a server-made `~` id, the creator first among the members, names from content', async () => {
    const chat = await create(ALICE, [BOB, BOB, ALICE], '  Project X  ');
    expect(chat.id).toMatch(/^~[A-Za-z0-9_-]{22}$/);
    expect(chat).toMatchObject({ title: 'Project X', creator: { id: ALICE, name: 'Alice' }, members: [{ id: ALICE }, { id: BOB }] });
  });

  it('members read and write; a non-member is FORBIDDEN on messages, sendMessage and newMessage', async () => {
    const chat = await create(ALICE, [BOB]);
    const sent = await gql(gateway, SEND, { c: chat.id, t: 'hi bob' }, as(ALICE));
    expect(sent.body.data.sendMessage.text).toBe('hi bob');
    const read = await gql(gateway, MESSAGES, { c: chat.id }, as(BOB));
    expect(read.body.data.messages.edges.map((e: { node: { text: string } }) => e.node.text)).toEqual(['hi bob']);

    const send = await gql(gateway, SEND, { c: chat.id, t: 'let me in' }, as(ADMIN));
    expect([send.body.data?.sendMessage ?? null, codes(send.body)]).toEqual([null, ['FORBIDDEN']]);
    const list = await gql(gateway, MESSAGES, { c: chat.id }, as(ADMIN));
    expect(codes(list.body)).toEqual(['FORBIDDEN']);
    const client = ws(ADMIN);
    try {
      const s = listen(client, chat.id);
      await until('the refusal', () => s.errors.length > 0);
      expect(s.errors).toEqual([[expect.objectContaining({ extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })]]);
    } finally {
      await client.dispose();
    }
  });

  it('a `~` id that is no private chat is refused, never created by a first message; free-form ids stay open', async () => {
    const res = await gql(gateway, SEND, { c: '~made-up', t: 'hello' }, as(ALICE));
    expect(codes(res.body)).toEqual(['FORBIDDEN']);
    const open = await gql(gateway, SEND, { c: `open-${Date.now()}`, t: 'hello' }, as(ADMIN));
    expect(open.body.errors).toBeUndefined();
  });

  it('member ids are checked with content: an unknown user is BAD_USER_INPUT, nothing created', async () => {
    const res = await gql(gateway, CREATE, { m: [BOB, '999999'] }, as(ALICE));
    expect(codes(res.body)).toEqual(['BAD_USER_INPUT']);
    expect(res.body.errors![0].message).toBe('memberIds: no such user: 999999');
    const bad = await gql(gateway, CREATE, { m: ['x'] }, as(ALICE));
    expect(codes(bad.body)).toEqual(['BAD_USER_INPUT']);
  });

  it('only the creator adds members; a member removes themself; the creator cannot be removed', async () => {
    const chat = await create(ALICE, [BOB]);
    expect(codes((await gql(gateway, ADD, { c: chat.id, m: [ADMIN] }, as(BOB))).body)).toEqual(['FORBIDDEN']);
    expect(codes((await gql(gateway, ADD, { c: chat.id, m: [ADMIN] }, as(ADMIN))).body)).toEqual(['FORBIDDEN']);
    const added = await gql(gateway, ADD, { c: chat.id, m: [ADMIN] }, as(ALICE));
    expect(added.body.data.addChatMembers.members).toEqual([{ id: ALICE }, { id: BOB }, { id: ADMIN }]);
    expect(codes((await gql(gateway, REMOVE, { c: chat.id, u: ADMIN }, as(BOB))).body)).toEqual(['FORBIDDEN']);
    expect(codes((await gql(gateway, REMOVE, { c: chat.id, u: ALICE }, as(ALICE))).body)).toEqual(['BAD_USER_INPUT']);
    const left = await gql(gateway, REMOVE, { c: chat.id, u: BOB }, as(BOB));
    expect(left.body.data.removeChatMember.members).toEqual([{ id: ALICE }, { id: ADMIN }]);
    expect(codes((await gql(gateway, MESSAGES, { c: chat.id }, as(BOB))).body)).toEqual(['FORBIDDEN']);
  });

  it("a removed member's open subscription ends with FORBIDDEN, whichever replica removed them; the others' go on", async () => {
    const chat = await create(ALICE, [BOB]);
    const bob = ws(BOB);
    const alice = ws(ALICE);
    try {
      const sb = listen(bob, chat.id);
      const sa = listen(alice, chat.id);
      // Both live: a probe reaches both.
      for (let i = 0; !(sb.events.length && sa.events.length); i++) {
        await gql(gateway, SEND, { c: chat.id, t: `probe ${i}` }, as(ALICE));
        await until('the probe', () => sb.events.length > 0 && sa.events.length > 0, 500).catch(() => undefined);
        if (i > 30) throw new Error('never live');
      }
      // Straight to the other chat replica: the removal reaches the gateway's replica through Redis.
      const removed = await gql(
        chat2,
        'mutation($c: ID!, $u: ID!) { removeChatMember(chatId: $c, userId: $u) { id } }',
        { c: chat.id, u: BOB },
        as(ALICE),
      );
      expect(removed.body.errors).toBeUndefined();
      await until("bob's end", () => sb.errors.length > 0);
      expect(sb.errors).toEqual([
        [expect.objectContaining({ message: 'Removed from this chat', extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })],
      ]);
      const after = await gql(gateway, SEND, { c: chat.id, t: 'bob is gone' }, as(ALICE));
      await until("alice's message", () => sa.events.some((e) => e.id === after.body.data.sendMessage.id));
      expect(sb.events.some((e) => e.text === 'bob is gone')).toBe(false);
      expect(sa.errors).toEqual([]);
    } finally {
      await bob.dispose();
      await alice.dispose();
    }
  });

  it('chats: the caller’s private chats, newest first, paged', async () => {
    const mine = [await create(BOB, [], 'one'), await create(BOB, [ALICE], 'two'), await create(ALICE, [BOB], 'three')];
    await create(ALICE, [], 'not bob’s');
    const first = await gql(gateway, CHATS, { f: 2 }, as(BOB));
    expect(first.body.data.chats.edges.map((e: { node: { title: string } }) => e.node.title)).toEqual(['three', 'two']);
    expect(first.body.data.chats.pageInfo.hasNextPage).toBe(true);
    const rest = await gql(gateway, CHATS, { f: 100, a: first.body.data.chats.pageInfo.endCursor }, as(BOB));
    const titles = rest.body.data.chats.edges.map((e: { node: { title: string } }) => e.node.title);
    expect(titles[0]).toBe('one');
    expect(titles).not.toContain('not bob’s');
    expect(mine).toHaveLength(3);
    expect(codes((await gql(gateway, CHATS, {})).body)).toEqual(['UNAUTHENTICATED']);
  });
});
