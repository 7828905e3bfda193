import { EventEmitter, on } from 'node:events';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildASTSchema, type GraphQLFieldConfig } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import jwt from 'jsonwebtoken';
import WebSocket from 'ws';
import { defineService } from '../service/define-service';
import { requireCaller, signAccessToken, type Caller } from '../auth/jwt';
import { SUBSCRIPTIONS_GAUGE } from './subscriptions';
import { capturingLogger, openTestDb, TEST_JWT_SECRET, TEST_SERVICE_ENV, testIdentityEnv, type TestDb } from '../testing';

/**
 * GraphQL over WebSocket as the kit serves it for any subgraph with a Subscription type: a tiny
 * service (borrowing content's name) whose events come from an EventEmitter.
 */
const root = mkdtempSync(join(tmpdir(), 'halo-subscriptions-'));
mkdirSync(join(root, 'migrations'));
writeFileSync(
  join(root, 'schema.graphql'),
  'type Query { hello: String! } type Subscription { ticks(topic: String!): String! whoami: String! fails: String! }',
);
const events = new EventEmitter();

interface Ctx {
  requestId: string;
  caller: Caller | null;
  greeting: string;
}

async function* once<T>(value: T) {
  yield value;
}

const service = defineService({
  name: 'content',
  root,
  domain: () => ({ greeting: 'halo' }),
  graphql: {
    schema: (typeDefs) => {
      const schema = buildASTSchema(typeDefs);
      schema.getQueryType()!.getFields().hello!.resolve = () => 'world';
      const fields = schema.getSubscriptionType()!.getFields() as unknown as Record<string, GraphQLFieldConfig<unknown, Ctx>>;
      Object.assign(fields.ticks!, {
        subscribe: (_: unknown, args: { topic: string }, ctx: Ctx) => {
          requireCaller(ctx.caller);
          return on(events, args.topic);
        },
        resolve: ([tick]: [string]) => tick,
      });
      Object.assign(fields.whoami!, {
        subscribe: (_: unknown, __: unknown, ctx: Ctx) => once(`${ctx.greeting} ${ctx.caller?.name ?? 'anonymous'} ${ctx.requestId}`),
        resolve: (text: string) => text,
      });
      Object.assign(fields.fails!, {
        subscribe: () => {
          throw new Error('a detail only the logs may see');
        },
      });
      return schema;
    },
    context: (domain) => ({ greeting: domain.greeting }),
  },
});

const ENV = { ...TEST_SERVICE_ENV, ...testIdentityEnv('content') };
const { logger, lines } = capturingLogger('info');
let db: TestDb;
let started: Awaited<ReturnType<typeof service.start>>;
let base: string;
const clients: Client[] = [];

const token = (name: string, claims: Record<string, unknown> = {}) =>
  Object.keys(claims).length
    ? jwt.sign({ sub: '5', name, role: 'user', ...claims }, TEST_JWT_SECRET, { algorithm: 'HS256' })
    : signAccessToken({ sub: '5', name, role: 'user' }, TEST_JWT_SECRET, 60);

function connect(params: Record<string, unknown>, url = base) {
  const closes: number[] = [];
  const client = createClient({
    url: `${url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: params,
    retryAttempts: 0,
    lazy: false,
    on: { closed: (e) => void closes.push((e as { code: number }).code) },
    onNonLazyError: () => undefined,
  });
  clients.push(client);
  return { client, closes };
}

/** Runs one operation to its end: what it yielded, and the error it ended with. */
function run(client: Client, query: string, variables: Record<string, unknown> = {}) {
  const out = { data: [] as unknown[], error: undefined as unknown, done: false };
  const cancel = client.subscribe(
    { query, variables },
    {
      next: (r) => void out.data.push(r.data),
      error: (e) => {
        out.error = e;
        out.done = true;
      },
      complete: () => void (out.done = true),
    },
  );
  return Object.assign(out, { cancel });
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const gauge = async (url = base) => {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(new RegExp(`^${SUBSCRIPTIONS_GAUGE}\\{[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
};

beforeAll(async () => {
  db = await openTestDb('subscriptions');
  started = await service.start(service.loadConfig(ENV), logger, { db });
  base = `http://127.0.0.1:${started.httpPort}`;
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => Promise.resolve(c.dispose())));
});

afterAll(async () => {
  await started?.stop();
  await db?.drop();
  rmSync(root, { recursive: true, force: true });
});

it('runs each operation with the HTTP context: request id (from connection_init), verified caller, the service’s own; logs carry the id', async () => {
  const signedIn = run(connect({ authorization: `Bearer ${token('Rina')}`, 'x-request-id': 'ws-1' }).client, 'subscription { whoami }');
  const anonymous = run(connect({}).client, 'subscription { whoami }');
  const query = run(connect({}).client, '{ hello }');
  await until(() => signedIn.done && anonymous.done && query.done);
  expect(signedIn.data).toEqual([{ whoami: 'halo Rina ws-1' }]);
  expect(anonymous.data).toEqual([{ whoami: expect.stringMatching(/^halo anonymous [0-9a-f-]{36}$/) }]);
  expect(query.data).toEqual([{ hello: 'world' }]);
  expect(lines).toContainEqual(expect.objectContaining({ msg: 'subscription started', requestId: 'ws-1' }));
  // The token never reaches a log line.
  expect(JSON.stringify(lines)).not.toContain('Bearer');
});

it('an invalid token closes with 4401; a token that expires during the connection closes it with 4401 then', async () => {
  const invalid = connect({ authorization: 'Bearer nope' });
  const notAString = connect({ authorization: ['Bearer x'] });
  // Expired 29 s ago: still inside the 30 s clock tolerance, so it is accepted — for about a second.
  const now = Math.floor(Date.now() / 1000);
  const expiring = connect({ authorization: `Bearer ${token('Rina', { iat: now - 60, exp: now - 29 })}` });
  const sub = run(expiring.client, 'subscription { ticks(topic: "t") }');
  await until(() => invalid.closes.length > 0 && notAString.closes.length > 0);
  expect([invalid.closes, notAString.closes]).toEqual([[4401], [4401]]);
  await until(() => sub.done, 5_000);
  expect(expiring.closes).toEqual([4401]);
});

it('formats errors like HTTP: a HaloError keeps its message and code; anything else is `Internal server error`, logged', async () => {
  const { client } = connect({});
  const refused = run(client, 'subscription { ticks(topic: "t") }');
  const failing = run(client, 'subscription { fails }');
  await until(() => refused.done && failing.done);
  expect(refused.error).toEqual([expect.objectContaining({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } })]);
  expect(failing.error).toEqual([{ message: 'Internal server error', path: ['fails'], extensions: { code: 'INTERNAL_SERVER_ERROR' } }]);
  expect(lines).toContainEqual(expect.objectContaining({ msg: 'resolver failed' }));
});

it('delivers events in order, counts open subscriptions in halo_graphql_subscriptions, and releases them on complete', async () => {
  const { client } = connect({ authorization: `Bearer ${token('Rina')}` });
  const a = run(client, 'subscription ($t: String!) { ticks(topic: $t) }', { t: 'a' });
  const b = run(client, 'subscription ($t: String!) { ticks(topic: $t) }', { t: 'a' });
  await until(async () => (await gauge()) === 2);
  for (const n of [1, 2, 3]) events.emit('a', `tick ${n}`);
  await until(() => a.data.length === 3 && b.data.length === 3);
  expect(a.data).toEqual([{ ticks: 'tick 1' }, { ticks: 'tick 2' }, { ticks: 'tick 3' }]);
  a.cancel();
  await until(async () => (await gauge()) === 1);
  b.cancel();
  await until(async () => (await gauge()) === 0);
  expect(events.listenerCount('a')).toBe(0);
});

it('cuts upgrades to other paths; shutdown closes every socket with 1001 `Going away` and ends its subscriptions', async () => {
  const other = new WebSocket(`${base.replace('http', 'ws')}/elsewhere`, 'graphql-transport-ws');
  await expect(new Promise((resolve, reject) => (other.once('open', resolve), other.once('error', reject)))).rejects.toThrow();

  const replica = await service.start(service.loadConfig(ENV), capturingLogger('silent').logger, { db });
  const url = `http://127.0.0.1:${replica.httpPort}`;
  const { client, closes } = connect({ authorization: `Bearer ${token('Rina')}` }, url);
  run(client, 'subscription { ticks(topic: "s") }');
  await until(async () => (await gauge(url)) === 1);
  await replica.stop();
  expect(closes).toEqual([1001]);
  expect(events.listenerCount('s')).toBe(0);
});
