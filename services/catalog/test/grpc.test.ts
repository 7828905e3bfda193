import { generateServiceKey, ServiceIdentity } from '@halo/kit/auth';
import { callUnary, grpc, HealthClient } from '@halo/kit/grpc';
import { catalog } from '@halo/proto';
import { at, insertProducts, startTestCatalog, type InsertedProduct, type TestCatalog } from './helpers';

/** `halo.catalog.v1.ProductService` over a real gRPC connection (payments will call it for orders). */

let t: TestCatalog;
let client: catalog.ProductServiceClient;
let health: HealthClient;
let products: InsertedProduct[];

/** Called as payments, the service ProductService lists, with a key catalog is told to trust. */
const payments = generateServiceKey('payments', 'test');
const OPTS = {
  defaultDeadlineMs: 2000,
  requestId: 'catalog-test-1',
  auth: { identity: new ServiceIdentity('payments', { signingKey: payments.privateJwk }), audience: 'catalog' },
};

beforeAll(async () => {
  t = await startTestCatalog({ SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [payments.publicJwk] }) });
  products = await insertProducts(t.db, [
    { name: 'Kopi', category: 'food', price: 1999, createdAt: at(1), description: 'Arabica' },
    { name: 'Teh', category: 'food', price: 450, createdAt: at(2) },
    { name: 'Max', category: 'x', price: 999999999999, createdAt: at(3) },
  ]);
  const address = `127.0.0.1:${t.service.grpcPort}`;
  client = new catalog.ProductServiceClient(address, grpc.credentials.createInsecure());
  health = new HealthClient(address, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  health?.close();
  await t?.close();
});

describe('ProductService.GetProduct', () => {
  it('answers a known product with its price in cents', async () => {
    const kopi = products[0]!;
    const res = await callUnary(client, client.getProduct, { id: kopi.id }, OPTS);
    expect(res.product).toEqual({
      id: kopi.id,
      name: 'Kopi',
      description: 'Arabica',
      category: 'food',
      priceCents: 1999,
      createdAt: kopi.createdAt,
      updatedAt: kopi.createdAt,
    });
  });

  it('keeps the largest price exact (int64 cents, no double on the way)', async () => {
    const res = await callUnary(client, client.getProduct, { id: products[2]!.id }, OPTS);
    expect(res.product?.priceCents).toBe(999999999999);
  });

  it('unknown → NOT_FOUND; a negative id → INVALID_ARGUMENT', async () => {
    await expect(callUnary(client, client.getProduct, { id: 999999 }, OPTS)).rejects.toMatchObject({
      kind: 'NOT_FOUND',
      message: 'Not found',
    });
    await expect(callUnary(client, client.getProduct, { id: 0 }, OPTS)).rejects.toMatchObject({ kind: 'NOT_FOUND' });
    await expect(callUnary(client, client.getProduct, { id: -1 }, OPTS)).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'Invalid id',
    });
  });
});

describe('ProductService.GetProducts', () => {
  it('answers in request order, leaves unknown ids out, in one SQL statement', async () => {
    const [kopi, teh] = products;
    const before = t.db.stats.queries;
    const res = await callUnary(client, client.getProducts, { ids: [teh!.id, 999999, kopi!.id] }, OPTS);
    expect(res.products.map((p) => p.name)).toEqual(['Teh', 'Kopi']);
    expect(t.db.stats.queries - before).toBe(1);
  });

  it('no ids → no products; more than 1000 → INVALID_ARGUMENT', async () => {
    expect((await callUnary(client, client.getProducts, { ids: [] }, OPTS)).products).toEqual([]);
    const many = Array.from({ length: 1001 }, (_, i) => i + 1);
    await expect(callUnary(client, client.getProducts, { ids: many }, OPTS)).rejects.toMatchObject({
      kind: 'BAD_REQUEST',
      message: 'At most 1000 ids',
    });
  });
});

describe('grpc.health.v1', () => {
  it('reports the server and ProductService as SERVING', async () => {
    for (const service of ['', 'halo.catalog.v1.ProductService']) {
      expect(await callUnary(health, health.Check, { service }, OPTS)).toEqual({ status: 'SERVING' });
    }
  });
});
