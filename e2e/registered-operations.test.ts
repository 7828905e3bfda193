import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createHaloClient, GraphQLRequestError, persistedQueryManifest, typed } from '@halo/client';
import { freePort } from '@halo/kit/testing';
import { parseOperationsCli, runOperationsCli } from '../tools/src/operations';
import { startE2ESystem, until } from './helpers';

/**
 * Client apps register their operations (issue 44), every process real: a client's manifest is
 * pushed with `npm run operations` to the registry, the gateway (PERSISTED_OPERATIONS=enforce)
 * polls the active lists and refuses what its client did not register on every transport — POST,
 * GET, a batch, WebSocket, SSE —, answers a registered operation sent by its id alone, lets an
 * allow-listed client through, keeps the last good lists while the registry is away, and stops
 * accepting a version's operations once it is retired. A second gateway in `audit` serves and counts.
 */
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const PRODUCTS = 'query WebProducts { products(limit: 2) { data { id name } } }';
const CATEGORY = 'query WebCategory($c: String) { products(limit: 1, category: $c) { data { id } } }';
const UNREGISTERED = '{ products(limit: 1) { data { price } } }';
const SUBSCRIPTION = 'subscription { newMessage(chatId: "registered-ops") { id } }';
const WEB = { 'apollographql-client-name': 'web', 'apollographql-client-version': '1.0.0' };
const POLL_MS = 300;

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let gateway: string;
let registry: string;
let audit: { child: ChildProcess; url: string; metrics: string; output: string[] } | undefined;
const dir = mkdtempSync(join(tmpdir(), 'halo-registered-'));

type Answer = { status: number; body: any }; // any: GraphQL's JSON, asserted per test
async function post(body: unknown, headers: Record<string, string> = WEB, url = gateway): Promise<Answer> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}
async function get(params: Record<string, string>, headers: Record<string, string> = WEB): Promise<Answer> {
  const res = await fetch(`${gateway}/graphql?${new URLSearchParams(params).toString()}`, { headers });
  return { status: res.status, body: await res.json() };
}
const apq = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });
const code = (a: Answer) => a.body.errors?.[0]?.extensions?.code as string | undefined;

/** `npm run operations -- <args>` against the system's registry (its developer key, as after npm start). */
async function operations(...args: string[]) {
  const result = await runOperationsCli(parseOperationsCli([...args, '--registry', registry], {}));
  expect(result).toEqual(expect.objectContaining({ code: 0 }));
  return result;
}

async function webProducts(url = gateway) {
  return post({ query: PRODUCTS }, WEB, url);
}

beforeAll(async () => {
  sys = await startE2ESystem({
    postgres: true,
    envFor: {
      gateway: { PERSISTED_OPERATIONS: 'enforce', PERSISTED_OPERATIONS_ALLOW_CLIENTS: 'admin-tool', REGISTRY_POLL_MS: String(POLL_MS) },
      registry: { HALO_ENV: 'development' },
    },
  });
  gateway = sys.url;
  registry = sys.direct('registry');
}, 180_000);

afterAll(async () => {
  audit?.child.kill('SIGTERM');
  await sys?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('before any push: an operation is refused 400 naming the client; the allow-listed client runs it', async () => {
  const refused = await webProducts();
  expect(refused).toEqual({
    status: 400,
    body: {
      errors: [
        { message: 'Operation not registered for client "web" (version 1.0.0)', extensions: { code: 'PERSISTED_QUERY_NOT_IN_LIST' } },
      ],
    },
  });
  const admin = await post({ query: PRODUCTS }, { 'apollographql-client-name': 'admin-tool' });
  expect(admin.status).toBe(200);
  expect(admin.body.data.products.data).toHaveLength(2);
  // Registering by APQ does not make an operation registered: still refused, by id too.
  expect(code(await post({ query: UNREGISTERED, extensions: apq(UNREGISTERED) }))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
  expect(await post({ extensions: apq(UNREGISTERED) })).toEqual(expect.objectContaining({ status: 400 }));
  expect(code(await post({ extensions: apq(UNREGISTERED) }))).toBe('PERSISTED_QUERY_NOT_FOUND');
});

it('after `npm run operations -- push` (an Apollo manifest), registered operations run, by id with no body too', async () => {
  const manifest = join(dir, 'web.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: [PRODUCTS, CATEGORY].map((body) => ({ id: sha256(body), name: /query (\w+)/.exec(body)![1], type: 'query', body })),
    }),
  );
  await operations('push', '--client', 'web', '--version', '1.0.0', manifest);
  const served = await until('the gateway to load the list', async () => {
    const r = await webProducts();
    return r.status === 200 ? r : null;
  });
  const expected = served.body;
  expect(expected.data.products.data).toHaveLength(2);
  // POST by the APQ hash, by documentId; GET by hash; all with no query text.
  expect(await post({ extensions: apq(PRODUCTS) })).toEqual({ status: 200, body: expected });
  expect(await post({ documentId: sha256(PRODUCTS) })).toEqual({ status: 200, body: expected });
  expect(await get({ extensions: JSON.stringify(apq(PRODUCTS)) })).toEqual({ status: 200, body: expected });
  expect(await get({ doc_id: `sha256:${sha256(PRODUCTS)}` })).toEqual({ status: 200, body: expected });
  // A batch of registered ones by id and in full; one unregistered operation refuses the batch before any runs.
  const batch = await post([{ documentId: sha256(PRODUCTS) }, { query: CATEGORY, variables: { c: 'none' } }]);
  expect(batch.status).toBe(200);
  expect(batch.body).toEqual([expected, { data: { products: { data: [] } } }]);
  expect(code(await post([{ documentId: sha256(PRODUCTS) }, { query: UNREGISTERED }]))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
  // Registered for web, not for another client, nor for one that names none.
  expect(code(await post({ query: PRODUCTS }, { 'apollographql-client-name': 'android' }))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
  expect((await post({ query: PRODUCTS }, {})).body.errors[0].message).toBe(
    'Operation not registered for this client (it sent no apollographql-client-name)',
  );
  // GET refuses the same way.
  expect(code(await get({ query: UNREGISTERED }))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
});

it('a Relay map pushed for another client runs by Relay’s own id (doc_id), for that client only', async () => {
  const relay = join(dir, 'relay.json');
  writeFileSync(relay, JSON.stringify({ 'ios-q1': UNREGISTERED }));
  await operations('push', '--client', 'ios', '--version', '7.0.0', relay);
  const ios = { 'apollographql-client-name': 'ios', 'apollographql-client-version': '7.0.0' };
  const answer = await until('the gateway to load the ios list', async () => {
    const r = await post({ doc_id: 'ios-q1' }, ios);
    return r.status === 200 ? r : null;
  });
  expect(answer.body.data.products.data[0]).toHaveProperty('price');
  expect(code(await post({ doc_id: 'ios-q1' }))).toBe('PERSISTED_QUERY_NOT_FOUND');
  await operations('retire', '--client', 'ios', '--version', '7.0.0');
});

it('the SDK’s worked example: an app’s manifest pushed, then its calls run by hash alone in enforce', async () => {
  const TOP = typed<{ products: { data: { id: string; name: string }[] } }, { n: number }>(
    'query ShopTop($n: Int) { products(limit: $n) { data { id name } } }',
  );
  const manifest = join(dir, 'shop.json');
  writeFileSync(manifest, JSON.stringify(await persistedQueryManifest([TOP])));
  await operations('push', '--client', 'shop', '--version', '2.0.0', manifest);
  const sent: string[] = [];
  const shop = createHaloClient({
    baseUrl: gateway,
    clientName: 'shop',
    clientVersion: '2.0.0',
    fetch: (input, init) => {
      sent.push(typeof init?.body === 'string' ? init.body : '');
      return fetch(input, init);
    },
  });
  await until('the gateway to load the shop list', () => shop.graphql.query(TOP, { n: 2 }).catch(() => null));
  // Once the list is loaded (while it loads, a call can end in the SDK's APQ resend with the text):
  // one request, only the hash over the wire, no registration round trip, no query text.
  sent.length = 0;
  const top = await shop.graphql.query(TOP, { n: 2 });
  expect(top.products.data).toHaveLength(2);
  expect(sent.map((body) => JSON.parse(body) as unknown)).toEqual([
    { variables: { n: 2 }, extensions: { persistedQuery: { version: 1, sha256Hash: sha256(TOP) } } },
  ]);
  // An operation the app did not register is refused, as a GraphQL error the app can read.
  const refused = await shop.graphql.query('{ products(limit: 1) { meta { total } } }').catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(GraphQLRequestError);
  expect((refused as GraphQLRequestError).codes).toEqual(['PERSISTED_QUERY_NOT_IN_LIST']);
});

it('over a WebSocket and an event stream, what web did not register is refused before anything is forwarded', async () => {
  const ws = createClient({
    url: `${gateway.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { 'apollographql-client-name': 'web' },
  });
  const overSocket = (query: string) =>
    new Promise<{ data?: unknown; code?: string }>((done) => {
      ws.subscribe(
        { query },
        {
          next: (v) => done(v.errors ? { code: v.errors[0]?.extensions?.code as string } : { data: v.data }),
          error: (e) => done({ code: (e as { extensions?: { code?: string } }[])[0]?.extensions?.code }),
          complete: () => undefined,
        },
      );
    });
  try {
    expect(await overSocket(SUBSCRIPTION)).toEqual({ code: 'PERSISTED_QUERY_NOT_IN_LIST' });
    expect(await overSocket(UNREGISTERED)).toEqual({ code: 'PERSISTED_QUERY_NOT_IN_LIST' });
    expect(await overSocket(PRODUCTS)).toEqual({ data: (await webProducts()).body.data });
  } finally {
    await ws.dispose();
  }
  const sse = await fetch(`${gateway}/graphql/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...WEB },
    body: JSON.stringify({ query: SUBSCRIPTION }),
  });
  expect(await sse.text()).toContain('PERSISTED_QUERY_NOT_IN_LIST');
});

it('counts operations by client, version and registered on /metrics', async () => {
  const metrics = await (await fetch(sys.gatewayMetricsUrl)).text();
  const value = (labels: string) =>
    Number(new RegExp(`halo_graphql_registered_operations_total\\{${labels}[^}]*\\} (\\d+)`).exec(metrics)?.[1] ?? NaN);
  expect(value('client="web",version="1.0.0",registered="true"')).toBeGreaterThanOrEqual(6);
  expect(value('client="web",version="1.0.0",registered="false"')).toBeGreaterThanOrEqual(2);
  // The socket named its client but no version.
  expect(value('client="web",version="none",registered="true"')).toBe(1);
  // A client the lists do not hold (android; web before its push) is not a label of its own.
  expect(metrics).not.toMatch(/client="android"/);
  expect(value('client="other",version="other",registered="false"')).toBeGreaterThanOrEqual(2);
  expect(value('client="other",version="none",registered="false"')).toBeGreaterThanOrEqual(1);
});

it('in audit, a second gateway serves an unregistered operation, counts and logs it with the client', async () => {
  const env = Object.fromEntries(
    readFileSync(`/proc/${sys.system.processes.find((p) => p.name === 'gateway')!.child.pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const [port, metricsPort] = [await freePort(), await freePort()];
  const output: string[] = [];
  const child = spawn(process.execPath, [resolve(__dirname, '../gateway/dist/main.js')], {
    env: { ...env, HTTP_PORT: String(port), METRICS_PORT: String(metricsPort), PERSISTED_OPERATIONS: 'audit' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => output.push(d.toString()));
  audit = { child, url: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, output };
  // A cold start of a second gateway process on a busy machine: a wide bound, only for it.
  await until(
    'the audit gateway ready with the lists',
    async () => {
      const r = await fetch(`${audit!.url}/readyz`);
      return r.status === 200 && ((await r.json()) as { operations?: string }).operations === 'ok';
    },
    60_000,
  );
  const served = await post({ query: UNREGISTERED }, WEB, audit.url);
  expect(served.status).toBe(200);
  expect(served.body.data.products.data[0]).toHaveProperty('price');
  expect((await post({ documentId: sha256(PRODUCTS) }, WEB, audit.url)).status).toBe(200);
  const metrics = await (await fetch(audit.metrics)).text();
  expect(metrics).toMatch(/halo_graphql_registered_operations_total\{client="web",version="1.0.0",registered="false"[^}]*\} 1\b/);
  expect(metrics).toMatch(/halo_graphql_registered_operations_total\{client="web",version="1.0.0",registered="true"[^}]*\} 1\b/);
  const line = await until('the audit log line', () =>
    Promise.resolve(
      output
        .join('')
        .split('\n')
        .find((l) => l.includes('operation not registered for its client')),
    ),
  );
  expect(JSON.parse(line)).toEqual(expect.objectContaining({ client: 'web', version: '1.0.0', hash: sha256(UNREGISTERED) }));
}, 90_000);

it('with the registry away, the last good lists stay; retiring the version unregisters its operations', async () => {
  const reg = sys.system.processes.find((p) => p.name === 'registry')!;
  reg.child.kill('SIGSTOP');
  try {
    const away = await until('readyz to report the lists away', async () => {
      const r = (await (await fetch(`${gateway}/readyz`)).json()) as { status: string; operations: string };
      return r.operations.startsWith('unreachable since ') ? r : null;
    });
    expect(away.status).toBe('ready');
    expect((await post({ documentId: sha256(PRODUCTS) })).status).toBe(200);
    expect(code(await post({ query: UNREGISTERED }))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
  } finally {
    reg.child.kill('SIGCONT');
  }
  await operations('retire', '--client', 'web', '--version', '1.0.0');
  const refused = await until('the gateway to drop the retired list', async () => {
    const r = await post({ documentId: sha256(PRODUCTS) });
    return r.status === 400 ? r : null;
  });
  expect(code(refused)).toBe('PERSISTED_QUERY_NOT_FOUND');
});
