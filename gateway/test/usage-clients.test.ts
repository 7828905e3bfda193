import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createHaloClient, type HaloClientOptions } from '@halo/client';
import { sseTransport } from '@halo/client/sse';
import { signAccessToken } from '@halo/kit/auth';
import { startTestService, TEST_JWT_SECRET, type TestService } from '@halo/kit/testing';
import { SDK_VERSION } from '../../packages/client/src/version';
import { registryService, type RegistryService } from '../../services/registry/src/service';
import { closedPort, startGateway, until, type RunningGateway } from './helpers';

/**
 * The client's name and version in the usage a gateway records, end to end through the real
 * registry (in-process, its own database): HTTP requests, subscriptions over WebSocket (the
 * `connection_init` payload, else the upgrade request's headers) and over SSE (the request's
 * headers), and queries sent over either, which run through Apollo without an HTTP request of
 * their own. A hostile version is dropped, never refused. Subscriptions are counted when admitted:
 * chat is not running here, so each then ends with its upstream unreachable. Last, Halo's SDK
 * (packages/client), which names itself by default.
 */
let reg: TestService<RegistryService>;
let gw: RunningGateway;
const token = `Bearer ${signAccessToken({ sub: '7', name: 'User 7', role: 'user' }, TEST_JWT_SECRET, 300)}`;

beforeAll(async () => {
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: '127.0.0.1:1' });
  const closed = `http://127.0.0.1:${await closedPort()}`;
  gw = await startGateway({
    REGISTRY_URL: reg.base,
    REGISTRY_POLL_MS: '200',
    USAGE_FLUSH_MS: '100',
    JWT_SECRET: TEST_JWT_SECRET,
    AUTH_GRPC_ADDR: '127.0.0.1:1',
    CHAT_URL: closed,
  });
  await until(async () => ((await (await fetch(`${gw.url}/readyz`)).json()) as { source?: string }).source === 'registry');
}, 30_000);

afterAll(async () => {
  await gw?.stop();
  await reg?.close();
});

/** What the registry stored for one operation: `client version` (or `client` alone) → count. */
async function usageOf(operation: string): Promise<Record<string, number>> {
  const { rows } = await reg.db.query<{ client: string; client_version: string; count: number }>(
    `SELECT client, client_version, sum(count)::int AS count FROM usage_hourly WHERE operation_name = $1
      GROUP BY client, client_version ORDER BY client, client_version`,
    [operation],
  );
  return Object.fromEntries(rows.map((r) => [r.client_version ? `${r.client} ${r.client_version}` : r.client, r.count]));
}
/** Waits until the registry holds what the gateway sends in its next flushes. */
const stored = (operation: string, expected: Record<string, number>) =>
  until(async () => {
    const seen = await usageOf(operation);
    return JSON.stringify(seen) === JSON.stringify(expected) ? seen : null;
  });

const post = async (query: string, headers: Record<string, string>) => {
  const res = await fetch(`${gw.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return { status: res.status, body: (await res.json()) as { data?: unknown; errors?: unknown[] } };
};

/** One operation over a socket, until its first result or its end. */
function overSocket(
  query: string,
  connectionParams: Record<string, unknown>,
  upgradeHeaders: Record<string, string> = {},
): Promise<{ result?: unknown; error?: unknown }> {
  // graphql-ws opens `new impl(url, protocol)`: the upgrade's headers go through the ws package's options.
  class WithHeaders extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers: upgradeHeaders });
    }
  }
  const client = createClient({
    url: `${gw.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WithHeaders,
    connectionParams,
    retryAttempts: 0,
  });
  return new Promise<{ result?: unknown; error?: unknown }>((resolve) => {
    client.subscribe(
      { query },
      { next: (result) => resolve({ result }), error: (error) => resolve({ error }), complete: () => resolve({}) },
    );
  }).finally(() => client.dispose());
}

/** One operation over SSE (`/graphql/stream`, distinct connections), read to its end. */
async function overStream(query: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw.url}/graphql/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text() };
}

it('HTTP: the name and version of apollographql-client-*, else x-client-*, per version', async () => {
  const q = 'query UsageHttp { __typename }';
  for (let i = 0; i < 2; i++) {
    expect((await post(q, { 'apollographql-client-name': 'ios-app', 'apollographql-client-version': '2.3.1' })).status).toBe(200);
  }
  await post(q, { 'apollographql-client-name': 'ios-app', 'apollographql-client-version': '2.3.0' });
  await post(q, { 'x-client-name': 'kiosk', 'x-client-version': '7.0.0-rc.1+build.5' });
  await post(q, { 'apollographql-client-name': 'web' });
  await post(q, {});
  expect(
    await stored('UsageHttp', { 'ios-app 2.3.0': 1, 'ios-app 2.3.1': 2, 'kiosk 7.0.0-rc.1+build.5': 1, unknown: 1, web: 1 }),
  ).toBeTruthy();
});

it('HTTP: a hostile version is dropped, the operation answered and counted without one', async () => {
  const q = 'query UsageHttpHostile { __typename }';
  for (const version of ['9'.repeat(65), '2.3.1\tbeta', '2.3.1 <script>', '../../etc/passwd']) {
    const res = await post(q, { 'apollographql-client-name': 'web', 'apollographql-client-version': version });
    expect(res).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
  }
  expect(await stored('UsageHttpHostile', { web: 4 })).toBeTruthy();
});

it('WebSocket subscription: the name and version of connection_init, else of the upgrade request', async () => {
  const q = 'subscription UsageWsSubscription { newMessage(chatId: "usage-ws") { text } }';
  const fromInit = await overSocket(q, {
    authorization: token,
    'apollographql-client-name': 'ios-app',
    'apollographql-client-version': '2.3.1',
  });
  // Admitted, counted, then ended by the upstream away: not refused.
  expect(JSON.stringify(fromInit)).toContain('UNAVAILABLE');
  // connection_init wins over the upgrade's headers, each header on its own.
  await overSocket(
    q,
    { authorization: token, 'apollographql-client-name': 'ios-app' },
    { 'apollographql-client-name': 'other', 'apollographql-client-version': '2.3.0' },
  );
  await overSocket(q, { authorization: token }, { 'x-client-name': 'kiosk', 'x-client-version': '7.0.0' });
  expect(await stored('UsageWsSubscription', { 'ios-app 2.3.0': 1, 'ios-app 2.3.1': 1, 'kiosk 7.0.0': 1 })).toBeTruthy();
});

it('WebSocket: a hostile version in connection_init (control characters, too long, not a string) is dropped', async () => {
  const q = 'subscription UsageWsHostile { newMessage(chatId: "usage-ws") { text } }';
  for (const version of ['2.3.1\u0000', '\u001b[31m2.3.1', '2.3.1\r\nx-evil: 1', '1'.repeat(65), 231, { v: 1 }]) {
    const outcome = await overSocket(q, {
      authorization: token,
      'apollographql-client-name': 'ios-app',
      'apollographql-client-version': version,
    });
    expect(JSON.stringify(outcome)).toContain('UNAVAILABLE');
  }
  expect(await stored('UsageWsHostile', { 'ios-app': 6 })).toBeTruthy();
});

it('SSE subscription: the name and version of the request headers', async () => {
  const q = 'subscription UsageSseSubscription { newMessage(chatId: "usage-sse") { text } }';
  const res = await overStream(q, { authorization: token, 'apollographql-client-name': 'web', 'apollographql-client-version': '2.4.0' });
  expect(res.status).toBe(200);
  expect(res.text).toContain('UNAVAILABLE');
  await overStream(q, { authorization: token, 'x-client-name': 'web', 'x-client-version': '\u00e92.4' });
  expect(await stored('UsageSseSubscription', { web: 1, 'web 2.4.0': 1 })).toBeTruthy();
});

it('a query sent over WebSocket or SSE is counted for the client its connection declared, not as unknown', async () => {
  const ws = await overSocket('query UsageWsQuery { __typename }', {
    'apollographql-client-name': 'ios-app',
    'apollographql-client-version': '2.3.1',
  });
  expect(ws).toEqual({ result: { data: { __typename: 'Query' } } });
  const sse = await overStream('query UsageSseQuery { __typename }', {
    'apollographql-client-name': 'web',
    'apollographql-client-version': '2.4.0',
  });
  expect(sse.text).toContain('{"data":{"__typename":"Query"}}');
  expect(await stored('UsageWsQuery', { 'ios-app 2.3.1': 1 })).toBeTruthy();
  expect(await stored('UsageSseQuery', { 'web 2.4.0': 1 })).toBeTruthy();
});

it('Halo’s SDK: @halo/client and its version by default, the app’s own when given, over HTTP, WebSocket and SSE', async () => {
  const sdk = (opts: HaloClientOptions) =>
    createHaloClient({
      baseUrl: gw.url,
      accessToken: token.slice('Bearer '.length),
      ...opts,
      subscriptions: { webSocketImpl: WebSocket, reconnect: { attempts: 0 }, ...opts.subscriptions },
    });
  const byDefault = sdk({});
  const app = sdk({ clientName: 'ios-app', clientVersion: '2.3.1' });
  const appSse = sdk({ clientName: 'web', clientVersion: '2.4.0', subscriptions: { transport: sseTransport } });
  try {
    // Persisted queries: the hash alone first (not executed, not counted), then the query.
    expect(await byDefault.graphql.query('query UsageSdk { __typename }')).toEqual({ __typename: 'Query' });
    expect(await app.graphql.query('query UsageSdk { __typename }')).toEqual({ __typename: 'Query' });
    for (const halo of [byDefault, app, appSse]) {
      const events = halo.graphql.iterate('subscription UsageSdkSubscription { newMessage(chatId: "usage-sdk") { text } }');
      await expect(events.next()).rejects.toMatchObject({ codes: ['UNAVAILABLE'] });
    }
    expect(await stored('UsageSdk', { [`@halo/client ${SDK_VERSION}`]: 1, 'ios-app 2.3.1': 1 })).toBeTruthy();
    expect(await stored('UsageSdkSubscription', { [`@halo/client ${SDK_VERSION}`]: 1, 'ios-app 2.3.1': 1, 'web 2.4.0': 1 })).toBeTruthy();
  } finally {
    await Promise.all([byDefault.close(), app.close(), appSse.close()]);
  }
});
