import { createClient as createSseClient } from 'graphql-sse';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { gql, metricValue, startE2ESystem } from './helpers';

/**
 * Shared upstream subscriptions (docs/adr/0011): subscribers of one public chat with the same
 * operation share one subscription to chat (chat's own `halo_graphql_subscriptions` counts it
 * once) and each still gets every message exactly once, whoever leaves first and whenever the
 * token of the one whose credentials opened it expires; private chats and resumed subscriptions
 * keep one each. Seeded users: 1 Admin, 2 Alice, 3 Bob (4 has a token but no profile).
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
let chat: string;

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true });
  gateway = sys.url;
  chat = sys.direct('chat');
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const token = (sub: string, ttlS = 600) => signAccessToken({ sub, name: `User ${sub}`, role: 'user' }, TEST_JWT_SECRET, ttlS);
const ALICE = '2';
const BOB = '3';
const CAROL = '4';

const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id text author { name } } }';
const RESUME = 'subscription($c: ID!, $a: ID) { newMessage(chatId: $c, after: $a) { id text } }';
const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id text } }';
const CREATE = 'mutation($m: [ID!]!) { createChat(memberIds: $m) { id } }';
const REMOVE = 'mutation($c: ID!, $u: ID!) { removeChatMember(chatId: $c, userId: $u) { id } }';

interface Stream {
  texts: string[];
  events: any[]; // any: GraphQL results, asserted per test
  errors: any[];
  stop(): void;
}

function ws(t: string): Client {
  return createClient({
    url: `${gateway.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${t}` },
    retryAttempts: 0,
    shouldRetry: () => false,
  });
}

function collect(subscribe: (sink: { next(v: any): void; error(e: unknown): void; complete(): void }) => () => void): Stream {
  const s: Stream = { texts: [], events: [], errors: [], stop: () => undefined };
  s.stop = subscribe({
    next: (v) => {
      s.events.push(v);
      s.texts.push(v.data?.newMessage?.text);
    },
    error: (e) => void s.errors.push(e),
    complete: () => undefined,
  });
  return s;
}

const listen = (client: Client, query: string, variables: Record<string, unknown>) =>
  collect((sink) => client.subscribe({ query, variables }, sink));

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function send(t: string, chatId: string, text: string) {
  const res = await gql(gateway, SEND, { c: chatId, t: text }, { authorization: `Bearer ${t}` });
  expect(res.body.errors).toBeUndefined();
  return res.body.data.sendMessage as { id: string; text: string };
}

const gauge = metricValue;

/** Chat's own count of the subscriptions it serves (the gateway's upstream ones). */
const atChat = () => gauge(`${chat}/metrics`, 'halo_graphql_subscriptions');

/** Probes until every stream has heard one (each is live), then forgets the probes. */
async function live(t: string, chatId: string, ...streams: Stream[]): Promise<void> {
  for (let i = 0; ; i++) {
    const probe = `probe ${i} ${Math.random()}`;
    await send(t, chatId, probe);
    const heard = () => streams.every((s) => s.texts.includes(probe));
    const end = Date.now() + 500;
    while (!heard() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    if (heard()) break;
    if (i > 40) throw new Error('the subscriptions never became live');
  }
  await until('no subscriptions but these at chat', async () => (await atChat()) <= streams.length);
  for (const s of streams) {
    s.texts.length = 0;
    s.events.length = 0;
  }
}

const texts = (s: Stream) => s.texts.filter((t) => !t.startsWith('probe '));

describe('a public chat', () => {
  it('two callers share one upstream subscription and each gets every message exactly once', async () => {
    const room = `e2e-share-${Date.now()}`;
    const [a, b] = [ws(token(ALICE)), ws(token(BOB))];
    try {
      const sa = listen(a, NEW, { c: room });
      const sb = listen(b, NEW, { c: room });
      await live(token(ALICE), room, sa, sb);
      expect(await atChat()).toBe(1);
      expect(await gauge(sys.gatewayMetricsUrl, 'halo_gateway_upstream_subscriptions')).toBe(1);
      expect(await gauge(sys.gatewayMetricsUrl, 'halo_graphql_subscriptions')).toBe(2);
      const sent = [];
      for (let i = 0; i < 10; i++) sent.push((await send(token(BOB), room, `m${i}`)).text);
      await until('both streams', () => texts(sa).length >= 10 && texts(sb).length >= 10);
      await new Promise((r) => setTimeout(r, 200));
      expect(texts(sa)).toEqual(sent);
      expect(texts(sb)).toEqual(sent);
      expect(sa.events.at(-1).data.newMessage.author).toEqual({ name: 'Bob' });
      expect(sb.events.at(-1)).toEqual(sa.events.at(-1));
      expect([...sa.errors, ...sb.errors]).toEqual([]);
    } finally {
      await Promise.all([a.dispose(), b.dispose()]);
    }
    await until('chat to serve none', async () => (await atChat()) === 0);
  });

  it('the first caller leaving, or closing its socket, does not stop the others; the last leaving ends it', async () => {
    const room = `e2e-share-leave-${Date.now()}`;
    const [a, b, c] = [ws(token(ALICE)), ws(token(BOB)), ws(token(CAROL))];
    try {
      const sa = listen(a, NEW, { c: room });
      await live(token(ALICE), room, sa);
      const sb = listen(b, NEW, { c: room });
      const sc = listen(c, NEW, { c: room });
      await live(token(ALICE), room, sa, sb, sc);
      expect(await atChat()).toBe(1);
      // Messages keep coming while the owner (Alice, first) leaves: none lost, none twice.
      const sent: string[] = [];
      const sending = (async () => {
        for (let i = 0; i < 30; i++) {
          sent.push((await send(token(CAROL), room, `n${i}`)).text);
          await new Promise((r) => setTimeout(r, 30));
        }
      })();
      await until('some messages', () => texts(sb).length >= 5);
      sa.stop();
      await until('Bob to hear more', () => texts(sb).length >= 15);
      await a.dispose();
      await sending;
      await until('every message', () => texts(sb).length >= 30 && texts(sc).length >= 30);
      await new Promise((r) => setTimeout(r, 300));
      expect(texts(sb)).toEqual(sent);
      expect(texts(sc)).toEqual(sent);
      expect(await atChat()).toBe(1);
      // Bob's socket goes: Carol alone still hears.
      await b.dispose();
      await send(token(ALICE), room, 'after bob');
      await until('Carol hears', () => texts(sc).includes('after bob'));
      expect(texts(sc).filter((t) => t === 'after bob')).toHaveLength(1);
      expect([...sb.errors, ...sc.errors]).toEqual([]);
    } finally {
      await Promise.all([a.dispose(), b.dispose(), c.dispose()]);
    }
    await until('chat to serve none', async () => (await atChat()) === 0);
  });

  it("the owner's token expiring hands the upstream over without a gap or a duplicate", async () => {
    const room = `e2e-share-expiry-${Date.now()}`;
    // 33 s: the gateway hands over 30 s before expiry, then closes Alice's socket at expiry.
    const a = ws(token(ALICE, 33));
    const b = ws(token(BOB));
    try {
      const sa = listen(a, NEW, { c: room });
      await live(token(BOB), room, sa);
      const sb = listen(b, NEW, { c: room });
      await live(token(BOB), room, sa, sb);
      const sent: string[] = [];
      const started = Date.now();
      while (Date.now() - started < 36_000) {
        sent.push((await send(token(CAROL), room, `e${sent.length}`)).text);
        await new Promise((r) => setTimeout(r, 250));
      }
      await until('every message', () => texts(sb).length >= sent.length);
      await new Promise((r) => setTimeout(r, 300));
      expect(texts(sb)).toEqual(sent);
      expect(sb.errors).toEqual([]);
      expect(await atChat()).toBe(1);
    } finally {
      await Promise.all([a.dispose(), b.dispose()]);
    }
  }, 60_000);

  it('a subscriber over SSE shares it too and gets the same events', async () => {
    const room = `e2e-share-sse-${Date.now()}`;
    const a = ws(token(ALICE));
    const sse = createSseClient({ url: `${gateway}/graphql/stream`, headers: { authorization: `Bearer ${token(BOB)}` }, retryAttempts: 0 });
    try {
      const sa = listen(a, NEW, { c: room });
      const sb = collect((sink) => sse.subscribe({ query: NEW, variables: { c: room } }, sink));
      await live(token(ALICE), room, sa, sb);
      expect(await atChat()).toBe(1);
      await send(token(CAROL), room, 'over both');
      await until('both', () => texts(sa).length === 1 && texts(sb).length === 1);
      expect(sb.events).toEqual(sa.events);
    } finally {
      sse.dispose();
      await a.dispose();
    }
  });
});

describe('not shared', () => {
  it('resumed subscriptions keep one upstream each and replay from their own position', async () => {
    const room = `e2e-share-resume-${Date.now()}`;
    const first = await send(token(ALICE), room, 'r0');
    await send(token(ALICE), room, 'r1');
    const [a, b] = [ws(token(ALICE)), ws(token(BOB))];
    try {
      const sa = listen(a, RESUME, { c: room, a: first.id });
      const sb = listen(b, RESUME, { c: room, a: first.id });
      await until('both replays', () => sa.texts.includes('r1') && sb.texts.includes('r1'));
      await until('two at chat', async () => (await atChat()) === 2);
      expect(sa.texts[0]).toBe('r1');
      expect(sb.texts[0]).toBe('r1');
    } finally {
      await Promise.all([a.dispose(), b.dispose()]);
    }
    await until('chat to serve none', async () => (await atChat()) === 0);
  });

  it('a private chat keeps one upstream per member, and a removed member still gets FORBIDDEN', async () => {
    const created = await gql(gateway, CREATE, { m: [BOB] }, { authorization: `Bearer ${token(ALICE)}` });
    expect(created.body.errors).toBeUndefined();
    const room = created.body.data.createChat.id as string;
    expect(room.startsWith('~')).toBe(true);
    const [a, b, c] = [ws(token(ALICE)), ws(token(BOB)), ws(token(CAROL))];
    try {
      const sa = listen(a, NEW, { c: room });
      const sb = listen(b, NEW, { c: room });
      await live(token(ALICE), room, sa, sb);
      expect(await atChat()).toBe(2);
      // A non-member is refused at subscribe time, as before.
      const sc = listen(c, NEW, { c: room });
      await until("Carol's refusal", () => sc.errors.length > 0);
      expect(sc.errors[0][0].extensions.code).toBe('FORBIDDEN');
      const removed = await gql(gateway, REMOVE, { c: room, u: BOB }, { authorization: `Bearer ${token(ALICE)}` });
      expect(removed.body.errors).toBeUndefined();
      await until("Bob's end", () => sb.errors.length > 0);
      expect(sb.errors[0][0].extensions.code).toBe('FORBIDDEN');
      await send(token(ALICE), room, 'members only');
      await until('Alice hears', () => texts(sa).includes('members only'));
      expect(texts(sb)).not.toContain('members only');
      expect(sa.errors).toEqual([]);
    } finally {
      await Promise.all([a.dispose(), b.dispose(), c.dispose()]);
    }
  });
});

/**
 * A graphql-transport-ws client written out by hand over `ws`, to see the exact bytes of every
 * message (graphql-ws's client parses them away) and to stop reading like a stalled client.
 */
interface RawClient {
  /** Every message received, as sent. */
  messages: string[];
  subscribe(id: string, query: string, variables: Record<string, unknown>): void;
  complete(id: string): void;
  /** The `next` messages of one subscription, as sent. */
  nexts(id: string): string[];
  socket: WebSocket;
  close(): Promise<void>;
}

async function rawClient(t: string): Promise<RawClient> {
  const socket = new WebSocket(`${gateway.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const messages: string[] = [];
  const acked = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('message', (data: Buffer) => {
      const text = data.toString();
      messages.push(text);
      const message = JSON.parse(text);
      if (message.type === 'connection_ack') resolve();
      if (message.type === 'ping') socket.send('{"type":"pong"}');
    });
  });
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${t}` } }));
  await acked;
  const send = (message: unknown) => socket.send(JSON.stringify(message));
  return {
    messages,
    socket,
    subscribe: (id, query, variables) => send({ id, type: 'subscribe', payload: { query, variables } }),
    complete: (id) => send({ id, type: 'complete' }),
    nexts: (id) => messages.filter((m) => m.includes('"type":"next"') && JSON.parse(m).id === id),
    close: () =>
      new Promise((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.terminate();
      }),
  };
}

/** The text of a raw `next` message. */
const textOfRaw = (m: string) => JSON.parse(m).payload.data?.newMessage?.text as string | undefined;

describe('the frames of a shared subscription (docs/adr/0013)', () => {
  it('every subscription gets the same payload bytes under its own id, and stops at its complete', async () => {
    const room = `e2e-share-frames-${Date.now()}`;
    const a = await rawClient(token(ALICE));
    const b = await rawClient(token(BOB));
    // An id that JSON must escape, and two subscriptions on one socket.
    const subs: [RawClient, string][] = [
      [a, 'a "1" \\ é'],
      [b, 'b1'],
      [b, 'b2'],
    ];
    try {
      for (const [client, id] of subs) client.subscribe(id, NEW, { c: room });
      for (let i = 0; ; i++) {
        await send(token(CAROL), room, `probe ${i}`);
        await new Promise((r) => setTimeout(r, 100));
        if (subs.every(([client, id]) => client.nexts(id).some((m) => textOfRaw(m) === `probe ${i}`))) break;
        if (i > 40) throw new Error('the subscriptions never became live');
      }
      expect(await atChat()).toBe(1);
      // A short message, and one of 6,000 bytes (a frame with a 16-bit length).
      const long = '€'.repeat(2000);
      for (const text of ['short', long]) await send(token(BOB), room, text);
      const heard = (id: string, client: RawClient) => client.nexts(id).filter((m) => !textOfRaw(m)?.startsWith('probe '));
      await until('every message on every subscription', () => subs.every(([client, id]) => heard(id, client).length === 2));
      const payloads = subs.map(([client, id]) =>
        heard(id, client).map((m) => {
          const head = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
          expect(m.startsWith(head)).toBe(true);
          expect(m.endsWith('}')).toBe(true);
          expect(JSON.parse(m).id).toBe(id);
          return m.slice(head.length, -1);
        }),
      );
      expect(payloads[1]).toEqual(payloads[0]);
      expect(payloads[2]).toEqual(payloads[0]);
      expect(payloads[0]!.map((p) => JSON.parse(p).data.newMessage.text)).toEqual(['short', long]);
      expect(JSON.parse(payloads[0]![0]!).data.newMessage.author).toEqual({ name: 'Bob' });

      // b2 completes: b1 and Alice still hear, b2 nothing more, and the same socket stays open.
      b.complete('b2');
      await until('b2 to be gone', async () => (await gauge(sys.gatewayMetricsUrl, 'halo_graphql_subscriptions')) === 2);
      await send(token(CAROL), room, 'after b2');
      await until('Alice and b1 hear', () => heard('b1', b).length === 3 && heard('a "1" \\ é', a).length === 3);
      expect(heard('b2', b)).toHaveLength(2);
      expect([...a.messages, ...b.messages].filter((m) => JSON.parse(m).type === 'error')).toEqual([]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    await until('chat to serve none', async () => (await atChat()) === 0);
  });

  it('a subscriber that stops reading ends with SLOW_CONSUMER, and the others still get every message', async () => {
    const room = `e2e-share-slow-${Date.now()}`;
    // 14 copies of each text (aliases): ~84 KB per event, so the socket buffers fill in a few dozen.
    const BIG = `subscription($c: ID!) { newMessage(chatId: $c) { id ${Array.from({ length: 14 }, (_, i) => `t${i}: text`).join(' ')} } }`;
    const textOf = (m: string) => JSON.parse(m).payload.data?.newMessage?.t0 as string | undefined;
    const fast = await rawClient(token(ALICE));
    const slow = await rawClient(token(BOB));
    const subscriptions = () => gauge(sys.gatewayMetricsUrl, 'halo_graphql_subscriptions');
    try {
      fast.subscribe('fast', BIG, { c: room });
      slow.subscribe('slow', BIG, { c: room });
      for (let i = 0; ; i++) {
        await send(token(CAROL), room, `probe ${i}`);
        await new Promise((r) => setTimeout(r, 100));
        const heard = (c: RawClient, id: string) => c.nexts(id).some((m) => textOf(m) === `probe ${i}`);
        if (heard(fast, 'fast') && heard(slow, 'slow')) break;
        if (i > 40) throw new Error('the subscriptions never became live');
      }
      expect(await atChat()).toBe(1);
      const probes = slow.nexts('slow').length;
      slow.socket.pause();
      const sent: string[] = [];
      const filler = '€'.repeat(1990);
      while ((await subscriptions()) > 1) {
        if (sent.length >= 600) throw new Error('the subscriber that stopped reading was never ended');
        for (let i = 0; i < 5; i++) sent.push((await send(token(CAROL), room, `${sent.length} ${filler}`)).text);
      }
      const measured = (c: RawClient, id: string) => c.nexts(id).slice(probes).map(textOf);
      await until('the fast subscriber to hear every message', () => measured(fast, 'fast').length >= sent.length);
      expect(measured(fast, 'fast')).toEqual(sent);
      // The slow one, reading again: what it was sent in order, then SLOW_CONSUMER, and nothing more.
      slow.socket.resume();
      const ended = () => slow.messages.map((m) => JSON.parse(m)).find((m) => m.type === 'error' && m.id === 'slow');
      await until('SLOW_CONSUMER', () => ended() !== undefined);
      expect(ended().payload[0].extensions.code).toBe('SLOW_CONSUMER');
      const got = measured(slow, 'slow');
      expect(got.length).toBeLessThan(sent.length);
      expect(got).toEqual(sent.slice(0, got.length));
      // The socket itself stays open: a new subscription on it works.
      slow.subscribe('again', NEW, { c: room });
      await until('two subscriptions', async () => (await subscriptions()) === 2);
      // Counted at the gateway before its upstream subscription is live at chat (a new selection,
      // a new upstream): probe until it hears, as the subscriptions above were waited for.
      for (let i = 0; !slow.nexts('again').some((m) => textOfRaw(m)?.startsWith('again ')); i++) {
        if (i > 40) throw new Error('the new subscription never heard');
        await send(token(CAROL), room, `again ${i}`);
        await new Promise((r) => setTimeout(r, 150));
      }
    } finally {
      await Promise.all([fast.close(), slow.close()]);
    }
    await until('chat to serve none', async () => (await atChat()) === 0);
  }, 120_000);
});
