import { metricValue, parseMetrics } from '@halo/kit/testing';
import { AS, call, startReplica, startTestCatalog, startTestPayments, type TestPayments } from './helpers';

/**
 * Orders (natural idempotency, docs/api/resources.md "Orders") against the real Postgres, with
 * catalog running in-process and called over real gRPC with payments' service token.
 */

let t: TestPayments;
let catalog: Awaited<ReturnType<typeof startTestCatalog>>;
let kopi: number;
let teh: number;

beforeAll(async () => {
  catalog = await startTestCatalog();
  [kopi, teh] = catalog.productIds as [number, number];
  t = await startTestPayments({ CATALOG_GRPC_ADDR: catalog.grpcAddr });
});

afterAll(async () => {
  await t?.close();
  await catalog?.close();
});

const order = (body: unknown, headers: Record<string, string> = AS.user(7)) => call(t.base, 'POST', '/api/orders', { body, headers });

async function rowsFor(clientOrderId: string) {
  const { rows } = await t.db.query<{ id: number; user_id: number }>(
    'SELECT id, user_id FROM orders WHERE client_order_id = $1 ORDER BY id',
    [clientOrderId],
  );
  return rows;
}

describe('POST /api/orders', () => {
  it('a new (user, client_order_id) → 201 with the order; the same again → 200 with the same order, nothing created', async () => {
    const first = await order({ product_id: kopi, client_order_id: 'order-1' });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      data: { id: expect.any(Number), user_id: 7, product_id: kopi, client_order_id: 'order-1', created_at: expect.stringMatching(/Z$/) },
    });
    const again = await order({ product_id: kopi, client_order_id: 'order-1' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // Natural idempotency: the existing order is the answer, whatever else the repeat says.
    const other = await order({ product_id: teh, client_order_id: 'order-1' });
    expect([other.status, other.body]).toEqual([200, first.body]);
    expect(await rowsFor('order-1')).toHaveLength(1);
  });

  it('20 parallel identical requests → one row, one 201, the rest 200 with the same id', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => order({ product_id: kopi, client_order_id: 'parallel-1' })));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, ...Array<number>(18).fill(200), 201].sort());
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body!.data.id)).size).toBe(1);
    expect(await rowsFor('parallel-1')).toHaveLength(1);
  });

  it('20 parallel identical requests spread over two replicas → still one row and one 201', async () => {
    const replica = await startReplica(t, { CATALOG_GRPC_ADDR: catalog.grpcAddr });
    try {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(i % 2 ? replica.base : t.base, 'POST', '/api/orders', {
            body: { product_id: teh, client_order_id: 'parallel-2' },
            headers: AS.user(7),
          }),
        ),
      );
      expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
      expect(answers.filter((a) => a.status === 200)).toHaveLength(19);
      expect(new Set(answers.map((a) => a.body!.data.id)).size).toBe(1);
      expect(await rowsFor('parallel-2')).toHaveLength(1);
    } finally {
      await replica.stop();
    }
  });

  it('client_order_id is per user: another user’s same id is another order', async () => {
    const a = await order({ product_id: kopi, client_order_id: 'shared-id' }, AS.user(7));
    const b = await order({ product_id: kopi, client_order_id: 'shared-id' }, AS.user(8));
    expect([a.status, b.status]).toEqual([201, 201]);
    expect((await rowsFor('shared-id')).map((r) => r.user_id)).toEqual([7, 8]);
  });

  it('an unknown product → 404 Product not found (catalog asked over gRPC), nothing created', async () => {
    const res = await order({ product_id: 999_999, client_order_id: 'unknown-product' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'Product not found' });
    expect(await rowsFor('unknown-product')).toEqual([]);
  });

  it("payments' /metrics shows its gRPC calls to catalog by method and final status, and catalog's breaker closed", async () => {
    expect((await order({ product_id: kopi, client_order_id: 'metrics-known' })).status).toBe(201);
    expect((await order({ product_id: 999_998, client_order_id: 'metrics-unknown' })).status).toBe(404);
    const text = await (await fetch(`${t.base}/metrics`)).text();
    const calls = (code: string) =>
      metricValue(text, 'halo_grpc_client_handling_seconds_count', {
        service: 'payments',
        peer: 'catalog',
        method: 'halo.catalog.v1.ProductService/GetProduct',
        code,
      });
    expect(calls('OK')).toBeGreaterThanOrEqual(1);
    expect(calls('NOT_FOUND')).toBeGreaterThanOrEqual(1);
    const breaker = parseMetrics(text).filter((m) => m.name === 'halo_grpc_client_breaker_open');
    expect(breaker).toEqual([{ name: 'halo_grpc_client_breaker_open', labels: { peer: 'catalog', service: 'payments' }, value: 0 }]);
  });

  it.each([
    [{ client_order_id: 'x' }, 'product_id is required'],
    [{ product_id: 'abc', client_order_id: 'x' }, 'product_id must be a positive integer'],
    [{ product_id: 0, client_order_id: 'x' }, 'product_id must be a positive integer'],
    [{ product_id: 1.5, client_order_id: 'x' }, 'product_id must be a positive integer'],
    [{ product_id: 1 }, 'client_order_id is required'],
    [{ product_id: 1, client_order_id: '' }, 'client_order_id is required'],
    [{ product_id: 1, client_order_id: '   ' }, 'client_order_id is required'],
    [{ product_id: 1, client_order_id: 42 }, 'client_order_id is required'],
    [{ product_id: 1, client_order_id: 'x'.repeat(101) }, 'client_order_id must be at most 100 characters'],
  ])('%j → 400 %s', async (body, message) => {
    const res = await order(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message });
  });

  it('a client_order_id of exactly 100 characters is fine, and kept byte for byte (not trimmed)', async () => {
    const id = ` ${'y'.repeat(98)} `;
    const res = await order({ product_id: kopi, client_order_id: id });
    expect(res.status).toBe(201);
    expect(res.body!.data.client_order_id).toBe(id);
  });

  it('401 without a caller, 403 for an API key without payments:write, before the body is looked at', async () => {
    expect((await order({}, {})).body).toEqual({ error: 'Token required' });
    const forbidden = await order({}, AS.key(7, 'profile:read'));
    expect([forbidden.status, forbidden.body]).toEqual([403, { error: 'Forbidden' }]);
    expect((await order({ product_id: kopi, client_order_id: 'by-key' }, AS.key(7, 'payments:write'))).status).toBe(201);
  });

  it('catalog unreachable → 503 at once; an existing order is still answered (no need to ask catalog)', async () => {
    const existing = await order({ product_id: kopi, client_order_id: 'before-outage' });
    const cut = await startReplica(t, { CATALOG_GRPC_ADDR: '127.0.0.1:1' });
    try {
      const started = Date.now();
      const res = await call(cut.base, 'POST', '/api/orders', {
        body: { product_id: kopi, client_order_id: 'during-outage' },
        headers: AS.user(7),
      });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'Service unavailable' });
      expect(Date.now() - started).toBeLessThan(2_500);
      expect(await rowsFor('during-outage')).toEqual([]);
      const retry = await call(cut.base, 'POST', '/api/orders', {
        body: { product_id: kopi, client_order_id: 'before-outage' },
        headers: AS.user(7),
      });
      expect([retry.status, retry.body]).toEqual([200, existing.body]);
    } finally {
      await cut.stop();
    }
  });
});

describe('GET /api/orders and /api/orders/:id', () => {
  it('lists the caller’s orders only, newest first', async () => {
    const mine = await call(t.base, 'GET', '/api/orders', { headers: AS.user(9) });
    expect(mine.body).toEqual({ data: [] });
    const a = await order({ product_id: kopi, client_order_id: 'list-a' }, AS.user(9));
    const b = await order({ product_id: teh, client_order_id: 'list-b' }, AS.user(9));
    const list = await call(t.base, 'GET', '/api/orders', { headers: AS.user(9) });
    expect(list.body).toEqual({ data: [b.body!.data, a.body!.data] });
  });

  it('one order: the caller’s own → 200; another user’s → 404, exactly like an unknown id', async () => {
    const created = await order({ product_id: kopi, client_order_id: 'mine-only' }, AS.user(10));
    const id = created.body!.data.id as number;
    expect((await call(t.base, 'GET', `/api/orders/${id}`, { headers: AS.user(10) })).body).toEqual(created.body);
    const other = await call(t.base, 'GET', `/api/orders/${id}`, { headers: AS.user(11) });
    expect([other.status, other.body]).toEqual([404, { error: 'Not found' }]);
    expect((await call(t.base, 'GET', '/api/orders/999999', { headers: AS.user(10) })).status).toBe(404);
    expect((await call(t.base, 'GET', '/api/orders/x', { headers: AS.user(10) })).body).toEqual({ error: 'Invalid id' });
    expect((await call(t.base, 'GET', `/api/orders/${id}`)).body).toEqual({ error: 'Token required' });
  });
});
