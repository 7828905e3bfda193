import { createClient as createSseClient } from 'graphql-sse';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { Client as Pg } from 'pg';
import { createHaloClient, type HaloClient, type ResumeOptions } from '@halo/client';
import { sseTransport } from '@halo/client/sse';
import { signAccessToken } from '@halo/kit/auth';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { gql, startE2ESystem } from './helpers';

/**
 * `newMessage(chatId, after)` through the gateway, over WebSocket and SSE, with TWO chat
 * processes sharing Postgres and Redis: a subscriber that was away resumes after the last message
 * it received and gets exactly what it missed, then the live ones (docs/api/graphql.md "Resuming").
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
let chat2: string;

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true, extraChatReplica: true });
  gateway = sys.url;
  chat2 = sys.chatReplicaUrl!;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const token = signAccessToken({ sub: '2', name: 'User 2', role: 'user' }, TEST_JWT_SECRET, 600);
const auth = { authorization: `Bearer ${token}` };

interface Message {
  id: string;
  text: string;
}
interface Stream {
  events: Message[];
  errors: unknown[];
  stop(): void;
}

const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id text } }';
const RESUME = 'subscription($c: ID!, $after: ID) { newMessage(chatId: $c, after: $after) { id text } }';

function ws(): Client {
  return createClient({
    url: `${gateway.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: auth,
    retryAttempts: 0,
  });
}

function listen(client: Pick<Client, 'subscribe'>, chatId: string, after?: string): Stream {
  const s: Stream = { events: [], errors: [], stop: () => undefined };
  s.stop = client.subscribe<{ newMessage: Message }>(
    { query: RESUME, variables: { c: chatId, ...(after ? { after } : {}) } },
    {
      next: (r) => (r.data ? void s.events.push(r.data.newMessage) : void s.errors.push(r.errors)),
      error: (e) => void s.errors.push(e),
      complete: () => undefined,
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

async function send(via: string, chatId: string, text: string): Promise<Message> {
  const res = await gql(via, SEND, { c: chatId, t: text }, auth);
  expect(res.body.errors).toBeUndefined();
  return res.body.data.sendMessage as Message;
}

/** A subscription hears only what is sent once it is live upstream: probes until one arrives. */
async function live(s: Stream, chatId: string): Promise<Message> {
  for (let i = 0; i < 50; i++) {
    const probe = await send(gateway, chatId, `probe ${i}`);
    await until('the probe', () => s.events.some((e) => e.id === probe.id), 500).catch(() => undefined);
    if (s.events.some((e) => e.id === probe.id)) return probe;
  }
  throw new Error(`never live: ${JSON.stringify(s.errors)}`);
}

const ids = (ms: Message[]) => ms.map((m) => m.id);

describe('resuming newMessage through the gateway', () => {
  it('WebSocket: away while 50 messages are sent through both replicas, resumed with after: exactly those 50, then live ones', async () => {
    const chatId = `resume-ws-${Date.now()}`;
    const first = ws();
    const s1 = listen(first, chatId);
    const last = await live(s1, chatId);
    await first.dispose(); // the phone changes networks
    const missed: Message[] = [];
    for (let i = 0; i < 50; i++) missed.push(await send(i % 2 ? gateway : chat2, chatId, `missed ${i}`));
    const second = ws();
    try {
      const s2 = listen(second, chatId, s1.events.at(-1)!.id);
      expect(s1.events.at(-1)!.id).toBe(last.id);
      await until('the 50 missed', () => s2.events.length >= 50);
      expect(ids(s2.events)).toEqual(ids(missed));
      const next = [await send(chat2, chatId, 'live 1'), await send(gateway, chatId, 'live 2')];
      await until('the live ones', () => s2.events.length >= 52);
      await new Promise((r) => setTimeout(r, 200)); // nothing more may come
      expect(ids(s2.events)).toEqual(ids([...missed, ...next]));
      expect(s2.errors).toEqual([]);
    } finally {
      await second.dispose();
    }
  });

  it('the seam under concurrent sends through both replicas: no gap, no duplicate', async () => {
    const chatId = `resume-seam-${Date.now()}`;
    const start = await send(gateway, chatId, 'start');
    const sent: Message[] = [];
    let sending = true;
    const senders = [gateway, chat2].map(async (via, n) => {
      for (let i = 0; sending; i++) sent.push(await send(via, chatId, `s${n}-${i}`));
    });
    await until('some history', () => sent.length >= 20);
    const client = ws();
    try {
      const atResume = sent.length;
      const s = listen(client, chatId, start.id);
      await until('messages sent after the resume', () => s.events.length >= atResume + 20 || s.errors.length > 0).finally(() => {
        sending = false;
      });
      await Promise.all(senders);
      const expected = ids(sent).sort((a, b) => Number(a) - Number(b));
      await until('every message', () => s.events.length >= expected.length);
      await new Promise((r) => setTimeout(r, 200));
      expect(ids(s.events)).toEqual(expected);
      expect(s.errors).toEqual([]);
    } finally {
      await client.dispose();
    }
  });

  it('SSE (/graphql/stream): the same resume, and a bad after is BAD_USER_INPUT', async () => {
    const chatId = `resume-sse-${Date.now()}`;
    const first = await send(gateway, chatId, 'seen');
    const missed = [await send(chat2, chatId, 'missed 1'), await send(gateway, chatId, 'missed 2')];
    const sse = createSseClient({ url: `${gateway}/graphql/stream`, headers: auth, retryAttempts: 0 });
    try {
      const s = listen(sse, chatId, first.id);
      await until('the missed ones', () => s.events.length >= 2);
      await live(s, chatId);
      expect(ids(s.events.slice(0, 2))).toEqual(ids(missed));
      s.stop();
      const other = await send(gateway, `${chatId}-other`, 'elsewhere');
      const bad = listen(sse, chatId, other.id);
      await until('the refusal', () => bad.errors.length > 0);
      expect(JSON.stringify(bad.errors)).toContain('after is not a message of this chat');
      expect(JSON.stringify(bad.errors)).toContain('BAD_USER_INPUT');
    } finally {
      sse.dispose();
    }
  });

  it('WebSocket: an after that is not a message of that chat, or not an id → BAD_USER_INPUT', async () => {
    const chatId = `resume-bad-${Date.now()}`;
    const other = await send(gateway, `${chatId}-other`, 'elsewhere');
    const client = ws();
    try {
      for (const [after, message] of [
        [other.id, 'after is not a message of this chat'],
        ['x1', 'Invalid id'],
      ] as const) {
        const s = listen(client, chatId, after);
        await until('the refusal', () => s.errors.length > 0);
        expect(s.errors).toEqual([[expect.objectContaining({ message, extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) })]]);
      }
    } finally {
      await client.dispose();
    }
  });
});

describe('@halo/client resumes by itself', () => {
  const sdks: HaloClient[] = [];
  afterAll(async () => {
    await Promise.all(sdks.map((c) => c.close()));
  });

  const sdk = (transport: 'websocket' | 'sse' = 'websocket') => {
    const client = createHaloClient({
      baseUrl: gateway,
      accessToken: token,
      subscriptions: {
        transport: transport === 'sse' ? sseTransport : transport,
        webSocketImpl: WebSocket,
        reconnect: { attempts: 60, baseDelayMs: 200, maxDelayMs: 1000 },
      },
    });
    sdks.push(client);
    return client;
  };

  type Data = { newMessage: Message };
  const PAGE =
    'query($c: ID!, $after: String) { messages(chatId: $c, first: 100, after: $after) { edges { node { id text } } pageInfo { hasNextPage endCursor } } }';

  /** The README's recipe: chat's resume, its gap read with `messages` (newest first) back to the cursor. */
  const chatResume = (client: HaloClient, chatId: string): ResumeOptions<Data> => ({
    cursorVariable: 'after',
    idOf: (d) => d.newMessage.id,
    fillGap: async (cursor) => {
      const gap: Message[] = [];
      for (let after: string | null = null; ;) {
        const page: { messages: { edges: { node: Message }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } =
          await client.graphql.query(PAGE, { c: chatId, after });
        const older = page.messages.edges.map((e) => e.node).filter((m) => BigInt(m.id) > BigInt(cursor));
        gap.push(...older);
        if (older.length < page.messages.edges.length || !page.messages.pageInfo.hasNextPage) break;
        after = page.messages.pageInfo.endCursor;
      }
      return gap.reverse().map((m) => ({ newMessage: m }));
    },
  });

  function listenSdk(client: HaloClient, chatId: string, after?: string): Stream {
    const s: Stream = { events: [], errors: [], stop: () => undefined };
    s.stop = client.graphql.subscribe<Data>(
      RESUME,
      { c: chatId, ...(after ? { after } : {}) },
      { next: (r) => void (r.data ? s.events.push(r.data.newMessage) : s.errors.push(r.errors)), error: (e) => void s.errors.push(e) },
      { resume: chatResume(client, chatId) },
    );
    return s;
  }

  it.each(['websocket', 'sse'] as const)(
    '%s, across a gateway restart: every message sent meanwhile, then the live ones, each exactly once',
    async (transport) => {
      const client = sdk(transport);
      const chatId = `sdk-resume-${transport}-${Date.now()}`;
      const s = listenSdk(client, chatId);
      const probe = await live(s, chatId);

      const gw = sys.system.processes.find((p) => p.name === 'gateway')!;
      const before = gw.child.pid;
      gw.child.kill('SIGKILL');
      // Sent while the SDK has no connection: straight to a chat replica.
      const missed: Message[] = [];
      for (let i = 0; i < 20; i++) missed.push(await send(chat2, chatId, `while down ${i}`));
      await until('the launcher to restart the gateway', () => gw.child.pid !== before, 30_000);
      await until('the missed ones', () => s.events.length >= 1 + missed.length, 60_000);
      const next = await send(gateway, chatId, 'after the restart');
      await until('the live one', () => s.events.some((e) => e.id === next.id));
      await new Promise((r) => setTimeout(r, 300)); // nothing more may come
      const probeAt = ids(s.events).indexOf(probe.id);
      expect(ids(s.events.slice(probeAt))).toEqual(ids([probe, ...missed, next]));
      expect(new Set(ids(s.events)).size).toBe(s.events.length);
      expect(s.errors).toEqual([]);
      s.stop();
    },
    120_000,
  );

  it('too far behind (REPLAY_TOO_LONG): the SDK reads the gap with messages, then resumes live', async () => {
    const client = sdk();
    const chatId = `sdk-gap-${Date.now()}`;
    const first = await send(gateway, chatId, 'first');
    // 1100 messages of history at once, written straight into chat's table.
    const pg = new Pg({ connectionString: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
    await pg.connect();
    try {
      await pg.query(
        `INSERT INTO "${sys.schemas.chat}".messages (chat_id, author_id, text) SELECT $1, 2, 'bulk ' || n FROM generate_series(1, 1100) n`,
        [chatId],
      );
    } finally {
      await pg.end();
    }
    const s = listenSdk(client, chatId, first.id);
    await until('the 1100', () => s.events.length >= 1100 || s.errors.length > 0, 30_000);
    const next = await send(gateway, chatId, 'live after the gap');
    await until('the live one', () => s.events.some((e) => e.id === next.id));
    expect(s.errors).toEqual([]);
    expect(s.events.slice(0, 1100).map((m) => m.text)).toEqual(Array.from({ length: 1100 }, (_, i) => `bulk ${i + 1}`));
    expect(s.events.at(-1)!.id).toBe(next.id);
    expect(s.events).toHaveLength(1101);
    s.stop();
  }, 60_000);
});
