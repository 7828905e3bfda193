import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { createClient, type Client } from 'graphql-ws';
import pg from 'pg';
import WebSocket from 'ws';
import { freePort, startRedisServer, TEST_DATABASE_URL, type RedisServer } from '@halo/kit/testing';
import { bearer, gql, startE2ESystem } from '../helpers';

/**
 * Two faults on the real system (every process separate, real Postgres):
 * - Redis stopped and started again under payments, chat and the gateway (a private
 *   redis-server on its own port, so the shared one stays up for the other files): payments fail
 *   closed (503, nothing charged), sendMessage is SERVICE_UNAVAILABLE and stores nothing, new
 *   subscriptions are refused, the gateway's Redis lookups fail open; once Redis is back everything
 *   works again without restarting Halo, and a `newMessage` subscription opened before the outage
 *   stays open through it and receives what is sent afterwards (README: "open subscriptions
 *   resume when it is back").
 * - Slow clients at the gateway (raw TCP): headers or a body trickling in, byte by byte, hold
 *   only their own connection; everyone else is served as usual, and nothing crashes.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let db: pg.Client;
let redis: RedisServer | undefined;
let redisPort: number;

async function startRedis(): Promise<void> {
  redis = await startRedisServer(redisPort);
}

async function stopRedis(): Promise<void> {
  await redis?.stop();
  redis = undefined;
}

beforeAll(async () => {
  redisPort = await freePort();
  await startRedis();
  const REDIS_URL = `redis://127.0.0.1:${redisPort}`;
  sys = await startE2ESystem({
    postgres: true,
    envFor: {
      payments: { REDIS_URL },
      chat: { REDIS_URL },
      // Short enough for the slow-client test to see them expire (defaults: 10 s and 30 s).
      gateway: { REDIS_URL, HTTP_HEADERS_TIMEOUT_MS: '3000', HTTP_REQUEST_TIMEOUT_MS: '4000' },
    },
  });
  db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
}, 120_000);

afterAll(async () => {
  await db?.end();
  await sys?.stop();
  await stopRedis();
}, 60_000);

const ALICE_ID = '2';
const alice = bearer(ALICE_ID, 'Alice', 'user');

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 15_000, everyMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function pay(key: string, amount: number) {
  const started = Date.now();
  const res = await fetch(`${sys.url}/api/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...alice },
    body: JSON.stringify({ amount }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { data?: { id: number; status: string }; error?: string };
  return { status: res.status, body, cacheControl: res.headers.get('cache-control'), ms: Date.now() - started };
}

const paymentRows = async () =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${sys.schemas.payments}".payments`)).rows[0]!.n;
const messageRows = async (chatId: string) =>
  (await db.query<{ text: string }>(`SELECT text FROM "${sys.schemas.chat}".messages WHERE chat_id = $1 ORDER BY id`, [chatId])).rows.map(
    (r) => r.text,
  );
const readyz = async (name: string) => (await fetch(`${sys.direct(name)}/readyz`, { signal: AbortSignal.timeout(5_000) })).status;

const SEND = 'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id text } }';
const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id text author { name } } }';

interface Stream {
  events: any[]; // any: GraphQL results, asserted per test
  errors: unknown[];
  completed: boolean;
}

function subscriber(): Client {
  // No retries: a subscription that ended must show, not be silently replaced.
  return createClient({
    url: `${sys.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: alice.authorization },
    retryAttempts: 0,
    shouldRetry: () => false,
  });
}

function listen(client: Client, chatId: string): Stream {
  const stream: Stream = { events: [], errors: [], completed: false };
  client.subscribe(
    { query: NEW, variables: { c: chatId } },
    {
      next: (v) => void stream.events.push(v),
      error: (e) => void stream.errors.push(e),
      complete: () => void (stream.completed = true),
    },
  );
  return stream;
}

const texts = (s: Stream) => s.events.map((e) => e.data?.newMessage?.text as string);

/**
 * Sends probes until one reaches `stream` (a subscription only hears what is sent once it is
 * live upstream, and graphql-ws does not say when that is); returns the probes sent.
 */
async function probeUntilHeard(stream: Stream, chatId: string, label: string): Promise<string[]> {
  const sent: string[] = [];
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const probe = `${label} ${sent.length}`;
    const res = await gql(sys.url, SEND, { c: chatId, t: probe }, alice).catch(() => undefined);
    if (res?.body.data?.sendMessage) {
      sent.push(probe);
      const heard = () => texts(stream).includes(probe);
      await until('the probe', heard, 500).catch(() => undefined);
      if (heard()) return sent;
    } else {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(
    `no ${label} probe reached the subscriber: events ${JSON.stringify(stream.events)}, errors ${JSON.stringify(stream.errors)}`,
  );
}

it('Redis stopped and restarted: payments fail closed, chat refuses sends, the edge fails open; all recover without a restart, and an open subscription resumes', async () => {
  const room = `e2e-redis-outage-${Date.now()}`;
  const client = subscriber();
  const late = subscriber();
  try {
    // Before: a payment, and a subscriber that hears its chat.
    const beforeKey = randomUUID();
    const before = await pay(beforeKey, 21);
    expect(before.status).toBe(201);
    const stream = listen(client, room);
    await probeUntilHeard(stream, room, 'before');
    const rowsBefore = await paymentRows();
    const pids = sys.system.processes.map((p) => p.child.pid);

    await stopRedis();

    // payments: 503 at once, nothing charged (no row), never a hang.
    for (let i = 0; i < 3; i++) {
      const res = await pay(randomUUID(), 5);
      expect([res.status, res.body, res.cacheControl]).toEqual([503, { error: 'Idempotency store unavailable' }, 'no-store']);
      expect(res.ms).toBeLessThan(5_000);
    }
    expect(await paymentRows()).toBe(rowsBefore);
    // chat: sendMessage refused with SERVICE_UNAVAILABLE, nothing stored.
    const refused = await gql(sys.url, SEND, { c: room, t: 'during the outage' }, alice);
    expect(refused.status).toBe(200);
    expect(refused.body.data).toEqual({ sendMessage: null });
    expect(refused.body.errors).toEqual([
      expect.objectContaining({
        message: 'Message delivery unavailable',
        extensions: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }),
      }),
    ]);
    expect(await messageRows(room)).not.toContain('during the outage');
    // A new subscription to a chat that chat does not carry yet is refused (an error frame, not a
    // hang). One to the chat already carried joins its channel (nothing to SUBSCRIBE in Redis):
    // it is accepted, and resumes with the open ones.
    const refusedStream = listen(late, `${room}-new`);
    const joined = listen(late, room);
    await until('the new subscription to be refused', () => refusedStream.errors.length > 0 || refusedStream.completed, 10_000);
    expect(refusedStream.errors).toEqual([
      [expect.objectContaining({ extensions: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }) })],
    ]);
    // The gateway's persisted queries and response cache miss; its queries are answered.
    const query = await gql(sys.url, '{ products(limit: 1) { meta { total } } }');
    expect([query.status, query.body.errors]).toEqual([200, undefined]);
    // Orchestrators see it: payments and chat are not ready (they are alive).
    expect(await readyz('payments')).toBe(503);
    expect(await readyz('chat')).toBe(503);

    await startRedis(); // the same address, empty: whatever Redis held is gone

    // payments work again, in the same processes.
    let after: Awaited<ReturnType<typeof pay>> | undefined;
    await until('payments to work again', async () => (after = await pay(randomUUID(), 7)).status === 201, 15_000, 200);
    expect(after!.body.data).toMatchObject({ status: 'succeeded' });
    // The payment made before the outage, retried: Redis forgot it, the database fence did not.
    const retried = await pay(beforeKey, 21);
    expect([retried.status, retried.body.data?.id]).toEqual([201, before.body.data!.id]);
    expect(await paymentRows()).toBe(rowsBefore + 1);

    // The subscription opened before the outage hears what is sent after it, in order, unbroken.
    await until('chat to be ready again', async () => (await readyz('chat')) === 200, 15_000, 200);
    await probeUntilHeard(stream, room, 'after');
    for (const t of ['one', 'two', 'three']) await gql(sys.url, SEND, { c: room, t }, alice);
    await until('the three messages', () => texts(stream).includes('three') && texts(joined).includes('three'));
    const heard = texts(stream);
    expect(heard.slice(-3)).toEqual(['one', 'two', 'three']);
    expect(heard).not.toContain('during the outage');
    expect(stream.events.every((e) => e.errors === undefined && e.data.newMessage.author.name)).toBe(true);
    expect([stream.errors, stream.completed]).toEqual([[], false]);
    expect(texts(joined).slice(-3)).toEqual(['one', 'two', 'three']);
    expect([joined.errors, joined.completed]).toEqual([[], false]);
    // Subscribing again to the refused chat works (what a client whose subscription was refused does).
    const again = listen(late, `${room}-new`);
    await probeUntilHeard(again, `${room}-new`, 'again');
    expect(again.errors).toEqual([]);
    // Nothing was restarted.
    expect(sys.system.processes.map((p) => p.child.pid)).toEqual(pids);
    expect(sys.system.processes.every((p) => p.restarts === 0)).toBe(true);
  } finally {
    await client.dispose();
    await late.dispose();
  }
}, 90_000);

/** A raw HTTP/1.1 client that writes `head` then `body`, or only a first part of them, byte by byte. */
function trickle(port: number, bytes: string, everyMs: number, upTo = bytes.length) {
  const socket: Socket = connect(port, '127.0.0.1');
  const state = { received: '', closed: false, sent: 0 };
  socket.on('data', (chunk: Buffer) => void (state.received += chunk.toString('latin1')));
  socket.on('close', () => void (state.closed = true));
  socket.on('error', () => undefined);
  const data = Buffer.from(bytes);
  const timer = setInterval(() => {
    if (state.sent >= Math.min(upTo, data.length) || socket.destroyed) return clearInterval(timer);
    socket.write(data.subarray(state.sent, state.sent + 1));
    state.sent++;
  }, everyMs);
  return {
    state,
    stop() {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

it('slow clients (headers or body byte by byte) hold only their own connection, until a contract 408 cuts it: everyone else is served, nothing crashes', async () => {
  const port = Number(new URL(sys.url).port);
  const gateway = sys.system.processes.find((p) => p.name === 'gateway')!;
  const pid = gateway.child.pid;
  const host = `Host: 127.0.0.1:${port}\r\n`;
  // Slow headers that never end within the test (a Slowloris).
  const slowHeaders = Array.from({ length: 30 }, (_, i) =>
    trickle(port, `GET /hello HTTP/1.1\r\n${host}X-Slow-${i}: ${'a'.repeat(200)}\r\n\r\n`, 50),
  );
  // Slow bodies on both kinds of body the gateway reads itself (GraphQL, a REST JSON body), never finished.
  const gqlBody = JSON.stringify({ query: '{ products(limit: 1) { meta { total } } }' });
  const slowBodies = Array.from({ length: 10 }, (_, i) => {
    const [path, body] = i % 2 ? ['/graphql', gqlBody] : ['/greet', JSON.stringify({ name: 'Lambat' })];
    const head = `POST ${path} HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    return trickle(port, head + body, 100, head.length + 5);
  });
  // A slow client that does finish: its request is answered like any other.
  const finishing = JSON.stringify({ name: 'Budi' });
  const patient = trickle(
    port,
    `POST /greet HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: ${finishing.length}\r\nConnection: close\r\n\r\n${finishing}`,
    15,
  );
  try {
    // Meanwhile: ordinary clients, REST and GraphQL, for as long as the slow ones trickle (~2.5 s).
    const until2 = Date.now() + 2_500;
    const answers: { status: number; ms: number }[] = [];
    while (Date.now() < until2) {
      const batch = await Promise.all([
        (async () => {
          const started = Date.now();
          const res = await fetch(`${sys.url}/hello`, { signal: AbortSignal.timeout(10_000) });
          expect(await res.json()).toEqual({ message: 'Halo Dunia!' });
          return { status: res.status, ms: Date.now() - started };
        })(),
        (async () => {
          const started = Date.now();
          const res = await gql(sys.url, '{ products(limit: 1) { meta { total } } user(id: "2") { name } }');
          expect(res.body.errors).toBeUndefined();
          return { status: res.status, ms: Date.now() - started };
        })(),
      ]);
      answers.push(...batch);
    }
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Each one answered in a time unrelated to the slow clients (a bound, not a benchmark).
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(3_000);

    await until('the patient client to be answered', () => patient.state.closed, 10_000);
    expect(patient.state.received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(patient.state.received).toContain('{"message":"Halo, Budi!"}');
    // The unfinished ones are cut when their time is up (HTTP_HEADERS_TIMEOUT_MS 3 s for the
    // headers, HTTP_REQUEST_TIMEOUT_MS 4 s for the whole request, checked every second): a
    // contract 408, and the connection closed.
    const slow = [...slowHeaders, ...slowBodies];
    await until('every slow client to be timed out', () => slow.every((c) => c.state.closed), 15_000);
    for (const c of slow) {
      expect(c.state.received).toMatch(/^HTTP\/1\.1 408 /);
      expect(c.state.received.endsWith('{"error":"Request timeout"}')).toBe(true);
    }
  } finally {
    for (const c of [...slowHeaders, ...slowBodies, patient]) c.stop();
  }
  // Clients that gave up mid-request cost nothing: the same gateway process goes on serving.
  expect((await fetch(`${sys.url}/hello`)).status).toBe(200);
  expect([gateway.child.pid, gateway.restarts]).toEqual([pid, 0]);
}, 60_000);
