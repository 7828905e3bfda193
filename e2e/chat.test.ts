import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient, type Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { TEST_JWT_SECRET } from '@halo/kit/testing';
import { signAccessToken } from '@halo/kit/auth';
import { gql, startE2ESystem } from './helpers';

/**
 * Chat through the gateway's single port: subscriptions over graphql-ws at ws://<gateway>/graphql,
 * TWO chat processes sharing the real Postgres schema and the real Redis, the gateway forwarding
 * each subscription to chat and resolving `author` from content per event.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
/** The chat process the gateway talks to, and a second replica beside it. */
let chat1: string;
let chat2: string;
let redis: Redis;
/** The gateway serves a copy of the committed supergraph, so a test can make it reload. */
const dir = mkdtempSync(join(tmpdir(), 'halo-e2e-chat-'));
const supergraph = join(dir, 'supergraph.graphql');

beforeAll(async () => {
  copyFileSync(resolve(__dirname, '../gateway/supergraph.graphql'), supergraph);
  sys = await startE2ESystem({
    postgres: true,
    extraChatReplica: true,
    // The file is the source here (no registry): this file's reload tests edit it.
    envFor: { chat: { REDIS_URL }, gateway: { SUPERGRAPH_PATH: supergraph, REGISTRY_URL: '' } },
  });
  gateway = sys.url;
  chat1 = sys.direct('chat');
  chat2 = sys.chatReplicaUrl!;
  redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
}, 120_000);

afterAll(async () => {
  redis?.disconnect();
  await sys?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const tokenFor = (sub: string, name = `User ${sub}`) => signAccessToken({ sub, name, role: 'user' }, TEST_JWT_SECRET, 300);
const wsUrl = (http: string) => `${http.replace(/^http/, 'ws')}/graphql`;

interface Stream {
  events: any[]; // any: GraphQL results, asserted per test
  errors: unknown[];
  completed: boolean;
  stop(): void;
}

function connect(http: string, token?: string, extra: Record<string, unknown> = {}): Client {
  return createClient({
    url: wsUrl(http),
    webSocketImpl: WebSocket,
    connectionParams: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra },
    retryAttempts: 0,
    shouldRetry: () => false,
  });
}

function listen(client: Client, query: string, variables: Record<string, unknown> = {}): Stream {
  const stream: Stream = { events: [], errors: [], completed: false, stop: () => undefined };
  stream.stop = client.subscribe(
    { query, variables },
    {
      next: (v) => void stream.events.push(v),
      error: (e) => void stream.errors.push(e),
      complete: () => void (stream.completed = true),
    },
  );
  return stream;
}

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id chatId text } }';

async function send(via: string, token: string, chatId: string, text: string) {
  const res = await gql(via, SEND, { c: chatId, t: text }, { authorization: `Bearer ${token}` });
  expect(res.body.errors).toBeUndefined();
  return res.body.data.sendMessage as { id: string; chatId: string; text: string };
}

/**
 * A subscription only hears what is sent after it is live upstream; graphql-ws does not say when
 * that is. Probes are sent until one arrives; everything after it is what the test sent.
 */
async function live(stream: Stream, token: string, chatId: string, field = 'newMessage'): Promise<() => any[]> {
  const deadline = Date.now() + 15_000;
  let last: unknown;
  for (let i = 0; Date.now() < deadline; i++) {
    const probe = `probe ${i} ${Math.random()}`;
    // While a chat process restarts, a send may fail: try again.
    const res: { body: { data?: any; errors?: unknown[] } } = await gql(
      gateway,
      SEND,
      { c: chatId, t: probe },
      { authorization: `Bearer ${token}` },
    ).catch((err: Error) => ({ body: { errors: [err.message] } }));
    if (!res.body.data?.sendMessage) {
      last = res.body;
      await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    const arrived = () => stream.events.findIndex((e) => e.data?.[field]?.text === probe);
    await until('the probe', () => arrived() >= 0, Math.min(300 + i * 100, 1000)).catch(() => undefined);
    const at = arrived();
    if (at >= 0) return () => stream.events.slice(at + 1);
  }
  throw new Error(
    `subscription on ${chatId} never became live: errors ${JSON.stringify(stream.errors)}, last send ${JSON.stringify(last)}`,
  );
}

const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id chatId text createdAt author { id name } } }';

describe('newMessage through the gateway', () => {
  it('delivers exactly its chat, in send order, across replicas, with the author from content', async () => {
    const alice = tokenFor('2');
    const { body } = await gql(gateway, '{ user(id: "2") { name } }');
    const authorName = body.data.user.name as string;
    const a = connect(gateway, alice);
    const b = connect(gateway, tokenFor('3'));
    try {
      const roomA = `e2e-a-${Date.now()}`;
      const roomB = `e2e-b-${Date.now()}`;
      const sa = listen(a, NEW, { c: roomA });
      const sb = listen(b, NEW, { c: roomB });
      const afterA = await live(sa, alice, roomA);
      const afterB = await live(sb, alice, roomB);
      const sent = [];
      // Alternately through the gateway (chat replica 1) and straight to replica 2.
      for (let i = 0; i < 10; i++) sent.push(await send(i % 2 === 0 ? gateway : chat2, alice, roomA, `hello ${i}`));
      await until('ten messages', () => afterA().length >= 10);
      await new Promise((r) => setTimeout(r, 200)); // nothing more may come
      const got = afterA();
      expect(got.map((e) => e.data.newMessage.text)).toEqual(sent.map((m) => m.text));
      expect(got.map((e) => e.data.newMessage.id)).toEqual(sent.map((m) => m.id));
      for (const e of got) {
        expect(e.errors).toBeUndefined();
        expect(e.data.newMessage).toMatchObject({ chatId: roomA, author: { id: '2', name: authorName } });
        expect(Number.isNaN(Date.parse(e.data.newMessage.createdAt))).toBe(false);
      }
      expect(afterB()).toEqual([]);
      expect([sa.errors, sb.errors]).toEqual([[], []]);
    } finally {
      await a.dispose();
      await b.dispose();
    }
  });

  it('concurrent senders on both replicas: a subscriber on each replica sees the same order, the id order', async () => {
    const token = tokenFor('2');
    const room = `e2e-order-${Date.now()}`;
    const viaGateway = connect(gateway, token);
    const onReplica2 = connect(chat2, token);
    try {
      const s1 = listen(viaGateway, 'subscription($c: ID!) { newMessage(chatId: $c) { id text } }', { c: room });
      const s2 = listen(onReplica2, 'subscription($c: ID!) { newMessage(chatId: $c) { id text } }', { c: room });
      const after1 = await live(s1, token, room);
      const after2 = await live(s2, token, room);
      // s2 became live last: drop what s1 heard of s2's probes.
      const sent = await Promise.all(
        Array.from({ length: 20 }, (_, i) => send(i % 2 === 0 ? gateway : chat2, tokenFor(String(2 + (i % 3))), room, `burst ${i}`)),
      );
      await until(
        'twenty messages on both',
        () => after1().filter((e) => e.data.newMessage.text.startsWith('burst')).length >= 20 && after2().length >= 20,
      );
      const ids1 = after1()
        .map((e) => e.data.newMessage.id)
        .filter((id: string) => sent.some((m) => m.id === id));
      const ids2 = after2().map((e) => e.data.newMessage.id);
      expect(ids1).toEqual(ids2);
      expect(ids1).toEqual([...ids1].sort((x, y) => Number(x) - Number(y)));
      expect(new Set(ids1)).toEqual(new Set(sent.map((m) => m.id)));
    } finally {
      await viaGateway.dispose();
      await onReplica2.dispose();
    }
  });

  it("a field that depends on the caller is never shared: the author reads their own email, others read ''", async () => {
    const alice = tokenFor('2');
    const room = `e2e-private-${Date.now()}`;
    const { body } = await gql(gateway, '{ user(id: "2") { email } }', {}, { authorization: `Bearer ${alice}` });
    const aliceEmail = body.data.user.email as string;
    expect(aliceEmail).toContain('@');
    const selection = 'subscription($c: ID!) { newMessage(chatId: $c) { text author { name email } } }';
    const asAlice = connect(gateway, alice);
    const asBob = connect(gateway, tokenFor('3'));
    try {
      const sa = listen(asAlice, selection, { c: room });
      const sb = listen(asBob, selection, { c: room });
      const afterA = await live(sa, alice, room);
      const afterB = await live(sb, alice, room);
      await send(gateway, alice, room, 'mine');
      await until('both to hear it', () => afterA().some((e) => e.data.newMessage.text === 'mine') && afterB().length > 0);
      expect(afterA().find((e) => e.data.newMessage.text === 'mine').data.newMessage.author.email).toBe(aliceEmail);
      expect(afterB()[0].data.newMessage.author).toMatchObject({ email: '' });
    } finally {
      await asAlice.dispose();
      await asBob.dispose();
    }
  });

  it('queries and mutations work over the socket too, through the same pipeline', async () => {
    const client = connect(gateway, tokenFor('2'));
    try {
      const result = await new Promise<any>((resolve, reject) => {
        let value: unknown;
        client.subscribe(
          { query: SEND, variables: { c: `e2e-ws-${Date.now()}`, t: 'over the socket' } },
          { next: (v) => (value = v), error: reject, complete: () => resolve(value) },
        );
      });
      expect(result.data.sendMessage).toMatchObject({ text: 'over the socket' });
    } finally {
      await client.dispose();
    }
  });
});

describe('refusals', () => {
  async function firstError(client: Client, query: string, variables: Record<string, unknown> = { c: 'x' }) {
    return new Promise<any>((resolve) => {
      client.subscribe({ query, variables }, { next: () => undefined, error: resolve, complete: () => resolve(null) });
    });
  }

  it('variables nested deeper than 64 levels are refused with VARIABLES_DEPTH_LIMIT, as over HTTP; the socket stays usable', async () => {
    const nested = (levels: number) => Array.from({ length: levels }).reduce<unknown>((value) => ({ v: value }), 1);
    const client = connect(gateway, tokenFor('2'));
    try {
      const code = { code: 'VARIABLES_DEPTH_LIMIT', maxVariablesDepth: 64 };
      const refused = [{ message: 'variables are nested deeper than 64 levels', extensions: code }];
      // The variables object is level 1, so `deep` adds 64 levels below it: 65 in all.
      expect(await firstError(client, NEW, { c: 'x', deep: nested(64) })).toEqual(refused);
      // A thousand levels (as deep as JSON.stringify goes comfortably): refused the same way.
      expect(await firstError(client, NEW, { c: 'x', deep: nested(1000) })).toEqual(refused);
      const atLimit = listen(client, NEW, { c: 'x', deep: nested(63) }); // 64 levels in all still run
      await new Promise((r) => setTimeout(r, 300));
      expect(atLimit.errors).toEqual([]);
      atLimit.stop();
    } finally {
      await client.dispose();
    }
  });

  it('an anonymous subscriber is refused with UNAUTHENTICATED; a bad token closes the socket with 4401', async () => {
    const anonymous = connect(gateway);
    try {
      const errors = await firstError(anonymous, NEW);
      expect(errors).toEqual([expect.objectContaining({ extensions: { code: 'UNAUTHENTICATED' } })]);
    } finally {
      await anonymous.dispose();
    }
    const forged = connect(
      gateway,
      signAccessToken({ sub: '2', name: 'x', role: 'user' }, 'not-the-secret-not-the-secret-not-the-secret', 300),
    );
    try {
      const closed = await firstError(forged, NEW);
      expect(closed).toMatchObject({ code: 4401, reason: 'Unauthorized' });
    } finally {
      await forged.dispose();
    }
  });

  it('depth and cost limits hold for subscriptions as for HTTP', async () => {
    const client = connect(gateway, tokenFor('2'));
    try {
      const deep = 'subscription($c: ID!) { newMessage(chatId: $c) { author { posts { author { posts { author { posts { id } } } } } } } }';
      expect(await firstError(client, deep)).toEqual([
        expect.objectContaining({ extensions: expect.objectContaining({ code: 'MAX_DEPTH_LIMIT', depth: 8, maxDepth: 7 }) }),
      ]);
      const costly = 'subscription($c: ID!) { newMessage(chatId: $c) { author { posts { comments { author { posts { id } } } } } } }';
      expect(await firstError(client, costly)).toEqual([
        expect.objectContaining({ extensions: expect.objectContaining({ code: 'COST_ESTIMATED_TOO_EXPENSIVE', maxCost: 1000 }) }),
      ]);
      // Exactly at the depth limit: accepted (it stays open until stopped).
      const atLimit = listen(
        client,
        'subscription($c: ID!) { newMessage(chatId: $c) { author { posts { author { posts { author { id } } } } } } }',
        { c: 'x' },
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(atLimit.errors).toEqual([]);
      atLimit.stop();
    } finally {
      await client.dispose();
    }
  });
});

describe('resources', () => {
  /** A process's `halo_graphql_subscriptions`: a chat's on its HTTP port, the gateway's on its metrics port. */
  const gauge = async (url: string) => {
    const text = await (await fetch(url.endsWith('/metrics') ? url : `${url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('halo_graphql_subscriptions'));
    return line ? Number(line.split(' ').pop()) : NaN;
  };

  it('100 subscribe/unsubscribe cycles leave no upstream subscription behind', async () => {
    const token = tokenFor('2');
    const room = `e2e-leak-${Date.now()}`;
    const client = connect(gateway, token);
    try {
      for (let i = 0; i < 100; i++) {
        const s = listen(client, NEW, { c: room });
        if (i % 10 === 0) await live(s, token, room);
        // The gateway counts its clients' subscriptions as chat counts the gateway's.
        if (i === 0) expect(await gauge(sys.gatewayMetricsUrl)).toBeGreaterThanOrEqual(1);
        s.stop();
      }
      let last = NaN;
      await until('the gauge to reach 0', () => {
        void gauge(chat1).then((v) => (last = v));
        return last === 0;
      });
      let atGateway = NaN;
      await until("the gateway's gauge to reach 0", () => {
        void gauge(sys.gatewayMetricsUrl).then((v) => (atGateway = v));
        return atGateway === 0;
      });
      const [, count] = (await redis.pubsub('NUMSUB', `halo:${sys.schemas.chat}:chat:${room}`)) as [string, number];
      expect(Number(count)).toBe(0);
    } finally {
      await client.dispose();
    }
  });

  it('a new supergraph keeps open the subscriptions it still validates, and ends the others with SUBSCRIPTION_SCHEMA_RELOAD', async () => {
    const token = tokenFor('2');
    const room = `e2e-reload-${Date.now()}`;
    const client = connect(gateway, token);
    const original = readFileSync(supergraph, 'utf8');
    const served = async () => ((await (await fetch(`${gateway}/readyz`)).json()) as { composition: string }).composition;
    const servedChange = async (from: string) => {
      const end = Date.now() + 15_000;
      while ((await served()) === from) {
        if (Date.now() > end) throw new Error('timed out waiting for the new supergraph');
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const before = await served();
    try {
      const s = listen(client, NEW, { c: room });
      const narrow = listen(client, 'subscription($c: ID!) { newMessage(chatId: $c) { id chatId text } }', { c: room });
      await live(s, token, room);
      // A real change (a description): the gateway loads what it parses, so a comment alone would not do.
      expect(original).toContain("The user's posts, newest first.");
      writeFileSync(supergraph, original.replace("The user's posts, newest first.", "The user's posts, newest first (reloaded)."));
      await servedChange(before);
      // Still valid: both stay open and keep receiving (issue 25 changed this: they used to end).
      await live(s, token, room);
      expect(s.errors).toEqual([]);
      expect(narrow.errors).toEqual([]);
      // `createdAt` removed from Message: the subscription selecting it ends, the other stays.
      writeFileSync(supergraph, original.replace('  text: String!\n  createdAt: String!\n', '  text: String!\n'));
      await until('the reload to end the subscription', () => s.errors.length > 0, 15_000);
      expect(s.errors).toEqual([[expect.objectContaining({ extensions: { code: 'SUBSCRIPTION_SCHEMA_RELOAD' } })]]);
      const marker = `after ${Date.now()}`;
      await send(gateway, token, room, marker);
      await until('the narrow subscription to receive', () => narrow.events.some((e) => e.data?.newMessage?.text === marker), 15_000);
      expect(narrow.errors).toEqual([]);
      const removed = await served();
      writeFileSync(supergraph, original);
      await servedChange(removed);
      const again = listen(client, NEW, { c: room });
      await live(again, token, room);
      expect(again.errors).toEqual([]);
      again.stop();
      narrow.stop();
    } finally {
      writeFileSync(supergraph, original);
      await client.dispose();
    }
  });

  it('chat going away ends the subscription with UNAVAILABLE, never a silent hang; it works again after the restart', async () => {
    const token = tokenFor('2');
    const room = `e2e-restart-${Date.now()}`;
    const client = connect(gateway, token);
    try {
      const s = listen(client, NEW, { c: room });
      await live(s, token, room);
      const chat = sys.system.processes.find((p) => p.name === 'chat' && !p.replica)!;
      chat.child.kill('SIGKILL');
      await until('an error for the subscriber', () => s.errors.length > 0 || s.completed);
      expect(s.errors).toEqual([[expect.objectContaining({ message: 'Service unavailable', extensions: { code: 'UNAVAILABLE' } })]]);
      // The launcher restarts chat; once it is ready, a new subscription works.
      let ready = false;
      await until(
        'chat to be ready again',
        () => {
          void fetch(`${chat1}/readyz`).then(
            (r) => (ready = r.ok),
            () => (ready = false),
          );
          return ready && chat.restarts === 1;
        },
        30_000,
      );
      const again = listen(client, NEW, { c: room });
      await live(again, token, room).catch((err: Error) => {
        throw new Error(
          `${err.message}\n${sys.logs
            .filter((l) => /^(chat|launcher|gateway)/.test(l))
            .slice(-25)
            .join('\n')}`,
        );
      });
      expect(again.errors).toEqual([]);
    } finally {
      await client.dispose();
    }
    // Its own waits (a live stream, the error, the restart, a live stream again) are bounded at
    // 15 + 10 + 30 + 15 s and each says what it waited for; jest's 30 s default would cut them off
    // first, on a loaded CI machine, with no cause.
  }, 90_000);

  it('a gateway shutting down closes its sockets with 1001 Going away', async () => {
    const client = connect(gateway, tokenFor('2'));
    const connected = new Promise((ok) => client.on('connected', ok));
    const closed = new Promise<{ code: number }>((ok) => client.on('closed', (e) => ok(e as { code: number })));
    const s = listen(client, NEW, { c: `e2e-stop-${Date.now()}` });
    await connected;
    await sys.system.stop();
    expect((await closed).code).toBe(1001);
    expect(s.completed || s.errors.length > 0).toBe(true);
  });
});
