import type { Db } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { startTestService, TEST_JWT_SECRET, testIdentityEnv, type TestService } from '@halo/kit/testing';
// The other services and the gateway through their packages (built by `npm run build`), never their sources.
import { authService } from '@halo/auth';
import { contentService } from '@halo/content';
import { createGateway, type Gateway } from '@halo/gateway';
import { loadGatewayConfig } from '@halo/gateway/dist/config';
import { AS, call, gql, startTestCatalog, startTestPayments, type TestPayments } from './helpers';

/**
 * Halo's first query that crosses subgraphs, through the real gateway and the real services
 * (in-process, each on its own throwaway schema): `me { orders { product user } }` starts in auth
 * (`me`), goes to payments (`User.orders`), then to catalog (`Order.product`) and content (names).
 * Its SQL per service is a constant of the query's shape: measured with 3 orders, then with 30
 * orders over 30 products, and the same both times.
 */

let content: TestService<Awaited<ReturnType<typeof contentService.start>>>;
let auth: TestService<Awaited<ReturnType<typeof authService.start>>>;
let catalog: Awaited<ReturnType<typeof startTestCatalog>>;
let payments: TestPayments;
let gateway: Gateway;
let url: string;
let alice: number;

beforeAll(async () => {
  content = await startTestService(contentService);
  auth = await startTestService(authService, { CONTENT_GRPC_ADDR: `127.0.0.1:${content.service.grpcPort}` });
  catalog = await startTestCatalog();
  payments = await startTestPayments({ CATALOG_GRPC_ADDR: catalog.grpcAddr });
  const config = loadGatewayConfig({
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'silent',
    JWT_SECRET: TEST_JWT_SECRET,
    AUTH_URL: auth.base,
    AUTH_GRPC_ADDR: `127.0.0.1:${auth.service.grpcPort}`,
    CONTENT_URL: content.base,
    CATALOG_URL: catalog.base,
    PAYMENTS_URL: payments.base,
    ...testIdentityEnv('gateway'),
  });
  gateway = createGateway(config, createLogger('gateway', 'silent'));
  url = `http://127.0.0.1:${(await gateway.start()).port}`;
  const { rows } = await content.db.query<{ id: number }>(
    `INSERT INTO users (name, email) VALUES ('Alice', 'alice@example.com') RETURNING id`,
  );
  alice = rows[0]!.id;
});

afterAll(async () => {
  await gateway?.stop();
  for (const t of [payments, catalog, auth, content]) await t?.close();
});

const ME_ORDERS = '{ me { id name orders { id clientOrderId product { id name price } user { id name } } } }';

async function addOrders(n: number, startAt: number) {
  const { rows } = await catalog.db.query<{ id: number }>(
    `INSERT INTO products (name, category, price) SELECT 'P' || i, 'misc', i FROM generate_series($1::int, $2::int) AS i RETURNING id`,
    [startAt, startAt + n - 1],
  );
  for (const [i, p] of rows.entries()) {
    const res = await call(payments.base, 'POST', '/api/orders', {
      body: { product_id: p.id, client_order_id: `fed-${startAt + i}` },
      headers: AS.user(alice, 'Alice'),
    });
    expect(res.status).toBe(201);
  }
}

/** Statements each service's database received while `fn` ran. */
async function statementsDuring(fn: () => Promise<void>) {
  const dbs: Record<string, Db> = { auth: auth.db, content: content.db, catalog: catalog.db, payments: payments.db };
  const before = Object.fromEntries(Object.entries(dbs).map(([k, db]) => [k, db.stats.queries]));
  await fn();
  return Object.fromEntries(Object.entries(dbs).map(([k, db]) => [k, db.stats.queries - before[k]!]));
}

/**
 * Expected statements per service for ME_ORDERS (the gateway's query plan, then each subgraph's loaders):
 * - auth 0: `me` is the verified caller, a reference.
 * - payments 1: `_entities(User) { orders }` → ordersByUserId, one `user_id = ANY($1)`.
 * - catalog 1: one `_entities` of every Product reference → productById, one `id = ANY($1)`.
 * - content 2: two fetches in the plan — `me`'s name, and the orders' `user { name }` — each one
 *   `_entities` batch → userById, one statement each (a fetch is its own request, so its own loaders).
 */
const EXPECTED = { auth: 0, payments: 1, catalog: 1, content: 2 };

it('me { orders { product user } } through the gateway costs a fixed number of statements per service: 3 orders, then 30', async () => {
  const measured: Record<string, number>[] = [];
  for (const [n, startAt] of [
    [3, 1],
    [27, 100],
  ] as const) {
    await addOrders(n, startAt);
    measured.push(
      await statementsDuring(async () => {
        const res = await gql(url, ME_ORDERS, undefined, AS.user(alice, 'Alice'));
        expect(res.body.errors).toBeUndefined();
        const me = res.body.data!.me;
        expect(me).toMatchObject({ id: String(alice), name: 'Alice' });
        expect(me.orders).toHaveLength(measured.length === 0 ? 3 : 30);
        for (const o of me.orders) {
          expect(o.user).toEqual({ id: String(alice), name: 'Alice' });
          expect(o.product.name).toMatch(/^P\d+$/);
        }
      }),
    );
  }
  expect(measured[0]).toEqual(EXPECTED);
  expect(measured[1]).toEqual(EXPECTED);
});

it('someone else’s orders are not reachable: user(id) { orders } is empty for another caller; anonymous is 401', async () => {
  const q = `query ($id: ID!) { user(id: $id) { name orders { id } } }`;
  const other = await gql(url, q, { id: String(alice) }, AS.user(alice + 1000));
  expect(other.body.data).toEqual({ user: { name: 'Alice', orders: [] } });
  const anonymous = await gql(url, q, { id: String(alice) });
  expect(anonymous.status).toBe(401);
});

it('createPayment and createOrder through the gateway; REST through the gateway shares the key', async () => {
  const headers = AS.user(alice, 'Alice');
  const key = 'fed-key-1';
  const m = await gql(
    url,
    'mutation ($k: String!) { createPayment(amount: 9.99, idempotencyKey: $k) { id amount status } }',
    { k: key },
    headers,
  );
  expect(m.body.data!.createPayment).toMatchObject({ amount: 9.99, status: 'succeeded' });
  const rest = await call(url, 'POST', '/api/payments', { body: { amount: 9.99 }, headers: { ...headers, 'idempotency-key': key } });
  expect(rest.status).toBe(201);
  expect(rest.headers.get('idempotent-replayed')).toBe('true');
  expect(String(rest.body!.data.id)).toBe(m.body.data!.createPayment.id);
  const o = await gql(
    url,
    'mutation ($p: ID!) { createOrder(productId: $p, clientOrderId: "fed-m") { id product { name } user { name } } }',
    { p: String(catalog.productIds[0]) },
    headers,
  );
  expect(o.body.data!.createOrder).toMatchObject({ product: { name: 'Kopi' }, user: { name: 'Alice' } });
});
