import { createClient as createSseClient } from 'graphql-sse';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { gql, metricValue, startE2ESystem } from './helpers';

/**
 * Subscriptions opened with an API key outlive the short-lived token auth exchanged the key for:
 * the gateway exchanges the key again every API_KEY_RECHECK_MS and hands each upstream
 * subscription over to the new token before chat ends the old one — every message arrives,
 * once, in order. A revoked key's subscriptions end with UNAUTHENTICATED within one period, and
 * the socket closes with 4401. Before: they went silent when the first token expired (no error,
 * no complete, the socket left open). Token life and period are short here (6 s, 1.5 s); in
 * production they are 5 minutes and 60 s.
 */
const TOKEN_TTL_S = 6;
const RECHECK_MS = 1_500;
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let admin: string;
let key: string;
let keyId: number;

beforeAll(async () => {
  sys = await startE2ESystem({
    envFor: { auth: { API_KEY_TOKEN_TTL: `${TOKEN_TTL_S}s` }, gateway: { API_KEY_RECHECK_MS: String(RECHECK_MS) } },
  });
  const login = await fetch(`${sys.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@halo.local', password: 'admin-password' }),
  });
  admin = ((await login.json()) as { token: string }).token;
  const made = await fetch(`${sys.url}/auth/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    body: JSON.stringify({ name: 'subscriber', scopes: ['chat:read'] }),
  });
  expect(made.status).toBe(201);
  ({ key, id: keyId } = ((await made.json()) as { data: { key: string; id: number } }).data);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NEW = 'subscription($c: ID!) { newMessage(chatId: $c) { id text } }';
const RESUME = 'subscription($c: ID!, $a: ID) { newMessage(chatId: $c, after: $a) { id text } }';

interface Stream {
  texts: string[];
  errors: unknown[];
  completed: boolean;
}

function sink(s: Stream) {
  return {
    // Over SSE an error that ends a subscription comes as a last `next` with `errors`, then `complete`.
    next: (v: { data?: { newMessage?: { text: string } } | null; errors?: readonly unknown[] }) =>
      void (v.errors ? s.errors.push(v.errors) : s.texts.push(v.data?.newMessage?.text ?? '?')),
    error: (e: unknown) => void s.errors.push(e),
    complete: () => void (s.completed = true),
  };
}

const send = async (room: string, text: string) => {
  const res = await gql(
    sys.url,
    'mutation($c: ID!, $t: String!) { sendMessage(chatId: $c, text: $t) { id } }',
    { c: room, t: text },
    {
      authorization: `Bearer ${admin}`,
    },
  );
  expect(res.body.errors).toBeUndefined();
  return String(res.body.data.sendMessage.id);
};

it('keeps delivering every message, once and in order, across several token lifetimes (WebSocket and SSE)', async () => {
  const room = `key-renewal-${Date.now()}`;
  const first = await send(room, 'first');
  let closeCode: number | undefined;
  const ws: Client = createClient({
    url: `${sys.url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { 'x-api-key': key },
    // Kept open without subscriptions (a lazy client closes it itself, 1000, once nothing is left).
    lazy: false,
    onNonLazyError: () => undefined,
    retryAttempts: 0,
    on: { closed: (e) => void (closeCode = (e as { code?: number }).code) },
  });
  const sse = createSseClient({ url: `${sys.url}/graphql/stream`, headers: { 'x-api-key': key }, retryAttempts: 0 });
  const shared: Stream = { texts: [], errors: [], completed: false };
  const own: Stream = { texts: [], errors: [], completed: false };
  const stream: Stream = { texts: [], errors: [], completed: false };
  const stops = [
    ws.subscribe({ query: NEW, variables: { c: room } }, sink(shared)),
    ws.subscribe({ query: RESUME, variables: { c: room, a: first } }, sink(own)),
    sse.subscribe({ query: NEW, variables: { c: room } }, sink(stream)),
  ];
  try {
    // Live once each has received a message (a fixed wait is too short on a loaded machine):
    // probes until then, left out of what is compared below.
    for (let i = 0; shared.texts.length === 0 || own.texts.length === 0 || stream.texts.length === 0; i++) {
      if (i === 100) throw new Error('the subscriptions never received a probe');
      await send(room, `probe${i}`);
      await sleep(250);
    }
    const sent: string[] = [];
    const until = Date.now() + TOKEN_TTL_S * 2.5 * 1000;
    while (Date.now() < until) {
      sent.push(`m${sent.length}`);
      await send(room, sent.at(-1)!);
      await sleep(400);
    }
    await sleep(1_000);
    const messages = (texts: string[]) => texts.filter((t) => !t.startsWith('probe'));
    expect({ shared: messages(shared.texts), own: messages(own.texts), stream: messages(stream.texts) }).toEqual({
      shared: sent,
      own: sent,
      stream: sent,
    });
    expect([...shared.errors, ...own.errors, ...stream.errors]).toEqual([]);
    expect(closeCode).toBeUndefined();

    // Revoked: within one period every subscription ends with UNAUTHENTICATED, and the socket closes with 4401.
    const revoked = await fetch(`${sys.url}/auth/api-keys/${keyId}`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } });
    expect(revoked.status).toBe(204);
    const end = Date.now() + RECHECK_MS * 3;
    while (
      (shared.errors.length === 0 || own.errors.length === 0 || stream.errors.length === 0 || closeCode === undefined) &&
      Date.now() < end
    ) {
      await sleep(50);
    }
    const codes = (s: Stream) => s.errors.map((e) => (e as { extensions?: { code?: string } }[])[0]?.extensions?.code ?? e);
    expect({ shared: codes(shared), own: codes(own), stream: codes(stream), closeCode }).toEqual({
      shared: ['UNAUTHENTICATED'],
      own: ['UNAUTHENTICATED'],
      stream: ['UNAUTHENTICATED'],
      closeCode: 4401,
    });
  } finally {
    for (const stop of stops) stop();
    await ws.dispose();
    sse.dispose();
  }
  expect(await metricValue(sys.gatewayMetricsUrl, 'halo_unhandled_rejections_total')).toBe(0);
}, 90_000);
