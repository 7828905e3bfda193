import pg from 'pg';
import { TEST_DATABASE_URL } from '@halo/kit/testing';
import type { RunningProcess } from '../../tools/src/launcher';
import { bearer, startE2ESystem } from '../helpers';

/**
 * Services failing under the real system (every process separate, real Postgres), as a client
 * sees it through the gateway:
 * - content stopped: GraphQL answers what the other subgraphs can (HTTP 200, partial `data`, a
 *   `SERVICE_UNAVAILABLE` error, `no-store`), content's REST routes 503; whole again once it is back;
 * - catalog stopped: creating an order (payments asks catalog over gRPC) is 503 and stores
 *   nothing; the same request succeeds exactly once when catalog is back;
 * - catalog hanging (SIGSTOP, not down: its socket accepts, nothing answers): the order answers
 *   503 after payments' gRPC deadline, never hangs; the circuit breaker then fails fast; it all
 *   recovers after SIGCONT.
 *
 * A process is "stopped" with SIGKILL: the launcher restarts it after its restart delay, set long
 * here (DOWN_MS) so that the outage lasts while the test looks at it (each check verifies the
 * process was not restarted yet), and recovery is polled for with a deadline.
 */
const DOWN_MS = 5_000;
/** payments' GRPC_DEADLINE_MS here (default 2000): lower, so the hang test is short. */
const DEADLINE_MS = 1_000;
/** payments' GRPC_BREAKER_THRESHOLD here (default 5). */
const BREAKER_THRESHOLD = 3;

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let db: pg.Client;
let productId: number;
const alice = bearer('2', 'Alice', 'user');

beforeAll(async () => {
  sys = await startE2ESystem({
    postgres: true,
    restart: { initialDelayMs: DOWN_MS },
    envFor: {
      payments: {
        GRPC_DEADLINE_MS: String(DEADLINE_MS),
        GRPC_BREAKER_THRESHOLD: String(BREAKER_THRESHOLD),
        // Default 5 s: how long an open breaker fails calls before letting one through again.
        GRPC_BREAKER_HALF_OPEN_MS: '1000',
      },
    },
  });
  db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
  const products = (await (await get('/products?limit=1')).json()) as { data: { id: number }[] };
  productId = products.data[0]!.id;
}, 120_000);

afterAll(async () => {
  // A test that failed half-way must not leave catalog stopped (SIGTERM waits for SIGCONT).
  for (const p of sys?.system.processes ?? []) p.child.kill('SIGCONT');
  await db?.end();
  await sys?.stop();
}, 60_000);

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${sys.url}${path}`, { headers, signal: AbortSignal.timeout(10_000) });

async function graphql(query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = alice) {
  const res = await fetch(`${sys.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  // any: GraphQL payloads, asserted per test
  return {
    status: res.status,
    cacheControl: res.headers.get('cache-control'),
    text,
    body: JSON.parse(text) as { data?: any; errors?: any[] },
  };
}

/** POST /api/orders as Alice; `ms` is how long the gateway took to answer. */
async function order(clientOrderId: string) {
  const started = Date.now();
  const res = await fetch(`${sys.url}/api/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...alice },
    body: JSON.stringify({ product_id: productId, client_order_id: clientOrderId }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { data?: { id: number; client_order_id: string }; error?: string };
  return { status: res.status, body, cacheControl: res.headers.get('cache-control'), ms: Date.now() - started };
}

const storedOrders = async (clientOrderIds: string[]) =>
  (
    await db.query<{ client_order_id: string }>(
      `SELECT client_order_id FROM "${sys.schemas.payments}".orders WHERE client_order_id = ANY($1)`,
      [clientOrderIds],
    )
  ).rows.map((r) => r.client_order_id);

const proc = (name: string) => sys.system.processes.find((p) => p.name === name && !p.replica)!;

/** SIGKILL, and resolves once the process is gone (the launcher restarts it DOWN_MS later). */
async function kill(p: RunningProcess): Promise<void> {
  const child = p.child;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
}

/** Polls `attempt` until `done` accepts its result; fails with the last result after `timeoutMs`. */
async function until<T>(what: string, attempt: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let last: unknown;
    try {
      const value = await attempt();
      if (done(value)) return value;
      last = value;
    } catch (err) {
      last = String(err);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

const NO_LEAK = /stack|127\.0\.0\.1|ECONNREFUSED|localhost|\bat \w+ \(/;

it('content stopped: GraphQL serves the other subgraphs with SERVICE_UNAVAILABLE for content, REST 503; whole again when it is back', async () => {
  const MIXED = 'query Mixed { products(limit: 2) { data { id name } meta { total } } user(id: "2") { id name } }';
  const whole = await graphql(MIXED);
  expect(whole.status).toBe(200);
  expect(whole.body.errors).toBeUndefined();
  expect(whole.body.data.user).toEqual({ id: '2', name: expect.any(String) });
  const products = whole.body.data.products;

  const content = proc('content');
  await kill(content);

  const partial = await graphql(MIXED);
  expect(partial.status).toBe(200);
  // catalog's field as before, content's null, one error that names the failure and nothing internal.
  expect(partial.body.data).toEqual({ products, user: null });
  expect(partial.body.errors).toEqual([{ message: 'Service unavailable', extensions: { code: 'SERVICE_UNAVAILABLE' } }]);
  expect(partial.text).not.toMatch(NO_LEAK);
  expect(partial.cacheControl).toBe('no-store');
  // The same for an anonymous caller (whose whole answers may be cached at the edge: a partial one never is).
  const anonymous = await graphql(MIXED, {}, {});
  expect([anonymous.status, anonymous.body.data?.user, anonymous.body.errors?.[0]?.extensions?.code]).toEqual([
    200,
    null,
    'SERVICE_UNAVAILABLE',
  ]);
  expect(anonymous.cacheControl).toBe('no-store');
  // Only content's fields: a query that touches only catalog is whole.
  const catalogOnly = await graphql('{ products(limit: 2) { meta { total } } }');
  expect([catalogOnly.status, catalogOnly.body]).toEqual([200, { data: { products: { meta: products.meta } } }]);

  for (const path of ['/posts/2', '/users/2/posts']) {
    const res = await get(path);
    expect(res.status).toBe(503);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ error: 'Service unavailable' });
  }
  // Everything above was answered while content was down (not after the launcher restarted it).
  expect(content.restarts).toBe(0);

  const again = await until(
    'the query to be whole again',
    () => graphql(MIXED),
    (r) => r.status === 200 && r.body.errors === undefined,
  );
  expect(again.body.data).toEqual(whole.body.data);
  expect(content.restarts).toBe(1);
  expect((await get('/posts/2')).status).toBe(200);
}, 60_000);

it('catalog stopped: an order is 503 and stores nothing; the same request succeeds exactly once when catalog is back', async () => {
  const before = await order(`before-${Date.now()}`);
  expect(before.status).toBe(201);

  const catalog = proc('catalog');
  await kill(catalog);
  const clientOrderId = `during-catalog-outage-${Date.now()}`;
  const refused = [];
  for (let i = 0; i < 3; i++) refused.push(await order(clientOrderId));
  for (const r of refused) {
    expect([r.status, r.body, r.cacheControl]).toEqual([503, { error: 'Service unavailable' }, 'no-store']);
    // Unreachable is known at once (retries and backoff stay inside the deadline).
    expect(r.ms).toBeLessThan(5_000);
  }
  // GraphQL's createOrder says the same in its own terms.
  const mutation = await graphql('mutation($p: ID!, $c: String!) { createOrder(productId: $p, clientOrderId: $c) { id } }', {
    p: String(productId),
    c: clientOrderId,
  });
  expect(mutation.status).toBe(200);
  expect(mutation.body.data).toBeNull();
  expect(mutation.body.errors).toEqual([
    expect.objectContaining({
      message: 'Service unavailable',
      path: ['createOrder'],
      extensions: expect.objectContaining({ code: 'SERVICE_UNAVAILABLE' }),
    }),
  ]);
  expect(mutation.text).not.toMatch(NO_LEAK);
  // An order that already exists needs no catalog: answered as before.
  const existing = await order(before.body.data!.client_order_id);
  expect([existing.status, existing.body]).toEqual([200, before.body]);
  // Nothing stored, nothing listed.
  expect(await storedOrders([clientOrderId])).toEqual([]);
  const listed = (await (await get('/api/orders', alice)).json()) as { data: { client_order_id: string }[] };
  expect(listed.data.map((o) => o.client_order_id)).not.toContain(clientOrderId);
  expect(catalog.restarts).toBe(0);

  // The client retries the same request until catalog (restarted by the launcher) answers; its
  // restart takes a while on a loaded machine.
  const created = await until(
    'the order to go through',
    () => order(clientOrderId),
    (r) => r.status !== 503,
    45_000,
  );
  expect(created.status).toBe(201);
  expect(created.body.data).toMatchObject({ client_order_id: clientOrderId, product_id: productId });
  const repeated = await order(clientOrderId);
  expect([repeated.status, repeated.body]).toEqual([200, created.body]);
  expect(await storedOrders([clientOrderId])).toEqual([clientOrderId]);
  expect(catalog.restarts).toBe(1);
}, 90_000);

it('catalog hanging past the gRPC deadline: 503 after the deadline, never a hang; the breaker then fails fast; recovery after SIGCONT', async () => {
  // Whatever the previous test left, the breaker is closed once an order goes through.
  await until(
    'orders to work',
    () => order(`warm-${Date.now()}`),
    (r) => r.status === 201,
  );
  const catalog = proc('catalog');
  const restarts = catalog.restarts;
  const ids = Array.from({ length: BREAKER_THRESHOLD + 2 }, (_, i) => `during-catalog-hang-${Date.now()}-${i}`);
  const answers: Awaited<ReturnType<typeof order>>[] = [];
  catalog.child.kill('SIGSTOP');
  try {
    for (const id of ids) answers.push(await order(id));
  } finally {
    catalog.child.kill('SIGCONT');
  }
  for (const a of answers) {
    expect([a.status, a.body, a.cacheControl]).toEqual([503, { error: 'Service unavailable' }, 'no-store']);
    expect(a.ms).toBeLessThan(5_000); // the no-hang bound: well under the gateway's 30 s upstream timeout
  }
  // Each call waited for its deadline until the breaker opened, then failed without waiting.
  const waited = answers.slice(0, BREAKER_THRESHOLD).map((a) => a.ms);
  for (const ms of waited) expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 20);
  for (const a of answers.slice(BREAKER_THRESHOLD)) expect(a.ms).toBeLessThan(DEADLINE_MS / 2);
  expect(await storedOrders(ids)).toEqual([]);

  // Resumed: the same request goes through once the breaker lets a call through again.
  const created = await until(
    'the order to go through',
    () => order(ids[0]!),
    (r) => r.status !== 503,
    15_000,
  );
  expect(created.status).toBe(201);
  expect((await order(ids[0]!)).status).toBe(200);
  expect(await storedOrders(ids)).toEqual([ids[0]]);
  expect(catalog.restarts).toBe(restarts); // stopped, not crashed: no restart
  expect((await get('/products?limit=1')).status).toBe(200);
}, 60_000);
