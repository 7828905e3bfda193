import { AS, call, gql, newKey, pay, startTestCatalog, startTestPayments, type TestPayments } from './helpers';

/**
 * payments' subgraph, called as the gateway calls it: the mutations over the same use cases as
 * REST (one key space for payments), the entities other subgraphs reach (`User.orders`, `Order`,
 * `Payment`) and the SQL each costs: a constant per request shape, never one per row.
 */

let t: TestPayments;
let catalog: Awaited<ReturnType<typeof startTestCatalog>>;

beforeAll(async () => {
  catalog = await startTestCatalog();
  t = await startTestPayments({ CATALOG_GRPC_ADDR: catalog.grpcAddr });
});

afterAll(async () => {
  await t?.close();
  await catalog?.close();
});

const CREATE_PAYMENT = `mutation ($amount: Float!, $key: String!) { createPayment(amount: $amount, idempotencyKey: $key) { id amount currency status createdAt } }`;
const CREATE_ORDER = `mutation ($p: ID!, $c: String!) { createOrder(productId: $p, clientOrderId: $c) { id clientOrderId createdAt product { id } user { id } } }`;
const USER_ORDERS = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on User { id orders { id clientOrderId product { id } user { id } } } } }`;
const ORDERS = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Order { id clientOrderId } } }`;
const PAYMENTS = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on Payment { id amount } } }`;

describe('createPayment', () => {
  it('charges once per key: a repeat answers the same payment; REST with the same key replays the same bytes', async () => {
    const key = newKey();
    const first = await gql(t.base, CREATE_PAYMENT, { amount: 12.34, key }, AS.user(7));
    expect(first.body.errors).toBeUndefined();
    const payment = first.body.data!.createPayment;
    expect(payment).toEqual({
      id: expect.any(String),
      amount: 12.34,
      currency: 'USD',
      status: 'succeeded',
      createdAt: expect.stringMatching(/Z$/),
    });
    expect((await gql(t.base, CREATE_PAYMENT, { amount: 12.34, key }, AS.user(7))).body.data!.createPayment).toEqual(payment);

    const viaRest = await pay(t.base, key, { amount: 12.34 });
    expect(viaRest.status).toBe(201);
    expect(viaRest.headers.get('idempotent-replayed')).toBe('true');
    expect(viaRest.body!.data).toEqual({
      id: Number(payment.id),
      amount: 12.34,
      currency: 'USD',
      status: 'succeeded',
      created_at: payment.createdAt,
    });
    const charges = await t.db.query('SELECT id FROM payments WHERE idempotency_key = $1', [key]);
    expect(charges.rowCount).toBe(1);
  });

  it('the same key for another amount → BAD_USER_INPUT with the REST message; errors use the kit’s codes', async () => {
    const key = newKey();
    await gql(t.base, CREATE_PAYMENT, { amount: 1, key }, AS.user(7));
    const reused = await gql(t.base, CREATE_PAYMENT, { amount: 2, key }, AS.user(7));
    expect(reused.body.errors![0]).toMatchObject({
      message: 'Idempotency-Key reused with a different request',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    const cases: [Record<string, unknown>, Record<string, string>, string, string][] = [
      [{ amount: 1, key: newKey() }, {}, 'UNAUTHENTICATED', 'Token required'],
      [{ amount: 1, key: newKey() }, AS.key(7, 'profile:read'), 'FORBIDDEN', 'Forbidden'],
      [{ amount: 1, key: '' }, AS.user(7), 'BAD_USER_INPUT', 'Idempotency-Key required'],
      [{ amount: 0.001, key: newKey() }, AS.user(7), 'BAD_USER_INPUT', 'amount must be a positive number with at most 2 decimals'],
    ];
    for (const [vars, headers, code, message] of cases) {
      const res = await gql(t.base, CREATE_PAYMENT, vars, headers);
      expect(res.body.errors![0]).toMatchObject({ message, extensions: { code } });
    }
  });
});

describe('createOrder', () => {
  it('creates, then answers the existing order; an unknown product is NOT_FOUND “Product not found”', async () => {
    const vars = { p: String(catalog.productIds[0]), c: 'gql-order-1' };
    const first = await gql(t.base, CREATE_ORDER, vars, AS.user(7));
    expect(first.body.errors).toBeUndefined();
    expect(first.body.data!.createOrder).toMatchObject({ clientOrderId: 'gql-order-1', product: { id: vars.p }, user: { id: '7' } });
    expect((await gql(t.base, CREATE_ORDER, vars, AS.user(7))).body.data!.createOrder).toEqual(first.body.data!.createOrder);
    const unknown = await gql(t.base, CREATE_ORDER, { p: '999999', c: 'gql-order-2' }, AS.user(7));
    expect(unknown.body.errors![0]).toMatchObject({ message: 'Product not found', extensions: { code: 'NOT_FOUND' } });
    const tooLong = await gql(t.base, CREATE_ORDER, { p: vars.p, c: 'x'.repeat(101) }, AS.user(7));
    expect(tooLong.body.errors![0]).toMatchObject({
      message: 'client_order_id must be at most 100 characters',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});

describe('order(id), payment(id): the caller’s own, NOT_FOUND for anyone else’s', () => {
  it('answers the owner and refuses another user', async () => {
    const created = await call(t.base, 'POST', '/api/orders', {
      body: { product_id: catalog.productIds[1], client_order_id: 'q-1' },
      headers: AS.user(12),
    });
    const paid = await pay(t.base, newKey(), { amount: 3 }, AS.user(12));
    const q = `query ($o: ID!, $p: ID!) { order(id: $o) { id clientOrderId } payment(id: $p) { id amount } }`;
    const vars = { o: String(created.body!.data.id), p: String(paid.body!.data.id) };
    expect((await gql(t.base, q, vars, AS.user(12))).body.data).toEqual({
      order: { id: vars.o, clientOrderId: 'q-1' },
      payment: { id: vars.p, amount: 3 },
    });
    const other = await gql(t.base, q, vars, AS.user(13));
    expect(other.body.data).toEqual({ order: null, payment: null });
    expect(other.body.errors!.map((e) => e.extensions!.code)).toEqual(['NOT_FOUND', 'NOT_FOUND']);
  });
});

describe('User.orders: the user themself only', () => {
  it('the caller’s own orders, newest first; another user’s list is empty, and so is anyone’s for an anonymous caller', async () => {
    for (const c of ['u-1', 'u-2'])
      await call(t.base, 'POST', '/api/orders', { body: { product_id: catalog.productIds[0], client_order_id: c }, headers: AS.user(14) });
    const reps = [{ __typename: 'User', id: '14' }];
    const own = await gql(t.base, USER_ORDERS, { reps }, AS.user(14));
    expect(own.body.data!._entities[0].orders.map((o: { clientOrderId: string }) => o.clientOrderId)).toEqual(['u-2', 'u-1']);
    expect(own.body.data!._entities[0].orders[0].user).toEqual({ id: '14' });
    expect((await gql(t.base, USER_ORDERS, { reps }, AS.user(15))).body.data!._entities).toEqual([{ id: '14', orders: [] }]);
    expect((await gql(t.base, USER_ORDERS, { reps })).body.data!._entities).toEqual([{ id: '14', orders: [] }]);
  });
});

/**
 * Statements per request, by shape, on a small and then a much larger dataset (src/graphql/loaders.ts):
 * - `_entities` of User (the caller) { orders { product user } } = 1: ordersByUserId, one
 *   `user_id = ANY($1)`; `product` and `user` are references (the gateway asks catalog and content).
 * - `_entities` of N Order references = 1: orderById, one `id = ANY($1)`.
 * - `_entities` of N Payment references = 1: paymentById.
 */
describe('batching: the SQL of a request does not grow with its rows', () => {
  const USER = 40;
  let orderIds: number[] = [];
  let paymentIds: number[] = [];

  async function addOrders(n: number) {
    for (let i = 0; i < n; i++) {
      const o = await call(t.base, 'POST', '/api/orders', {
        body: { product_id: catalog.productIds[i % 3], client_order_id: `batch-${orderIds.length}` },
        headers: AS.user(USER),
      });
      orderIds.push(o.body!.data.id as number);
      const p = await pay(t.base, newKey(), { amount: i + 1 }, AS.user(USER));
      paymentIds.push(p.body!.data.id as number);
    }
  }

  async function statements(query: string, variables: Record<string, unknown>) {
    const before = t.db.stats.queries;
    const res = await gql(t.base, query, variables, AS.user(USER));
    expect(res.body.errors).toBeUndefined();
    return { n: t.db.stats.queries - before, data: res.body.data! };
  }

  const measure = async () => ({
    userOrders: await statements(USER_ORDERS, { reps: [{ __typename: 'User', id: String(USER) }] }),
    orders: await statements(ORDERS, { reps: orderIds.map((id) => ({ __typename: 'Order', id: String(id) })) }),
    payments: await statements(PAYMENTS, { reps: paymentIds.map((id) => ({ __typename: 'Payment', id: String(id) })) }),
  });

  it('2 orders and payments, then 30: 1 statement per shape both times', async () => {
    orderIds = [];
    paymentIds = [];
    await addOrders(2);
    const small = await measure();
    await addOrders(28);
    const large = await measure();
    expect(small.userOrders.data._entities[0].orders).toHaveLength(2);
    expect(large.userOrders.data._entities[0].orders).toHaveLength(30);
    expect(large.orders.data._entities.every((e: unknown) => e !== null)).toBe(true);
    expect(large.payments.data._entities).toHaveLength(30);
    const counts = (m: typeof small) => ({ userOrders: m.userOrders.n, orders: m.orders.n, payments: m.payments.n });
    expect(counts(small)).toEqual({ userOrders: 1, orders: 1, payments: 1 });
    expect(counts(large)).toEqual(counts(small));
  });

  it('another user’s Order and Payment references resolve to null, not an error', async () => {
    const res = await gql(t.base, ORDERS, { reps: [{ __typename: 'Order', id: String(orderIds[0]) }] }, AS.user(USER + 1));
    expect(res.body.data!._entities).toEqual([null]);
    const pays = await gql(t.base, PAYMENTS, { reps: [{ __typename: 'Payment', id: String(paymentIds[0]) }] }, AS.user(USER + 1));
    expect(pays.body.data!._entities).toEqual([null]);
  });
});
