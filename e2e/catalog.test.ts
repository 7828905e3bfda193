import { bearer, gql, startE2ESystem } from './helpers';

/**
 * Products and API versioning through the gateway's single port: the real gateway, auth, content
 * and catalog processes on the real Postgres, demo products seeded into a throwaway schema.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;

beforeAll(async () => {
  sys = await startE2ESystem();
  url = sys.url;
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

interface ProductV1 {
  id: number;
  name: string;
  description: string;
  category: string;
  price: number;
  created_at: string;
  updated_at: string;
}
type ProductV2 = Omit<ProductV1, 'price'> & { price_cents: number };
interface Page<P> {
  data: P[];
  meta: { page: number; limit: number; total: number; totalPages: number; hasNext: boolean; hasPrev: boolean };
}

const SUNSET = 'Wed, 01 Sep 2027 00:00:00 GMT';
const LINK = '</docs/migrations/v1-to-v2.md>; rel="successor-version"';
const ADMIN = () => bearer('1', 'Admin', 'admin');

async function get<T = Record<string, any>>(path: string, headers: Record<string, string> = {}) {
  // any: bodies are asserted per test
  const res = await fetch(`${url}${path}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : null }; // any: asserted per test
}

function expectDeprecated(headers: Headers, yes: boolean) {
  expect([headers.get('deprecation'), headers.get('sunset'), headers.get('link')]).toEqual(
    yes ? ['true', SUNSET, LINK] : [null, null, null],
  );
}

describe('products (v1, unversioned)', () => {
  it('GET /products pages the seeded catalog with exact meta, and says v1 is deprecated', async () => {
    const res = await get<Page<ProductV1>>('/products');
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ page: 1, limit: 10, total: 42, totalPages: 5, hasNext: true, hasPrev: false });
    expect(res.body.data.map((p) => p.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(res.body.data[0]).toEqual({
      id: 1,
      name: 'Bumi Manusia',
      description: expect.any(String),
      category: 'books',
      price: 12.5,
      created_at: '2026-01-05T08:00:00.000Z',
      updated_at: '2026-01-05T08:00:00.000Z',
    });
    expectDeprecated(res.headers, true);
    expect(res.headers.get('vary')).toBe('Accept');
  });

  it('the last page, a page past the end, the limit cap and the fallbacks', async () => {
    expect((await get<Page<ProductV1>>('/products?page=5')).body.meta).toEqual({
      page: 5,
      limit: 10,
      total: 42,
      totalPages: 5,
      hasNext: false,
      hasPrev: true,
    });
    expect((await get<Page<ProductV1>>('/products?page=5')).body.data).toHaveLength(2);
    expect((await get<Page<ProductV1>>('/products?page=6')).body).toEqual({
      data: [],
      meta: { page: 6, limit: 10, total: 42, totalPages: 5, hasNext: false, hasPrev: true },
    });
    const capped = await get<Page<ProductV1>>('/products?limit=500');
    expect(capped.body.meta).toMatchObject({ limit: 100, totalPages: 1, hasNext: false });
    expect(capped.body.data).toHaveLength(42);
    expect((await get<Page<ProductV1>>('/products?page=abc&limit=0')).body.meta).toMatchObject({ page: 1, limit: 10 });
  });

  it('category filter + sort=price + order=desc, ties by id', async () => {
    const res = await get<Page<ProductV1>>('/products?category=games&sort=price&order=desc&limit=100');
    expect(res.body.meta.total).toBe(14);
    const rows = res.body.data;
    for (const p of rows) expect(p.category).toBe('games');
    for (let i = 1; i < rows.length; i++) {
      const [a, b] = [rows[i - 1]!, rows[i]!];
      expect(a.price > b.price || (a.price === b.price && a.id > b.id)).toBe(true);
    }
    expect(rows[0]).toMatchObject({ name: 'Wingspan', price: 59.99 });
  });

  it('an invalid sort or order is 400', async () => {
    const sort = await get('/products?sort=price;DROP TABLE products');
    expect({ status: sort.status, body: sort.body }).toEqual({ status: 400, body: { error: 'Invalid sort' } });
    const order = await get('/products?order=sideways');
    expect({ status: order.status, body: order.body }).toEqual({ status: 400, body: { error: 'Invalid order' } });
  });

  it('GET /products/:id, 404 and Invalid id', async () => {
    const one = await get<{ data: ProductV1 }>('/products/3');
    expect(one.body.data).toMatchObject({ id: 3, name: 'Chess Set', category: 'games', price: 19.99 });
    expectDeprecated(one.headers, true);
    expect(await get('/products/999999')).toMatchObject({ status: 404, body: { error: 'Not found' } });
    expect(await get('/products/abc')).toMatchObject({ status: 400, body: { error: 'Invalid id' } });
  });

  it('reads are public for 60 s in shared caches; with credentials, or on an error, no-store', async () => {
    expect((await get('/products')).headers.get('cache-control')).toBe('public, max-age=60');
    expect((await get('/api/v2/products/1')).headers.get('cache-control')).toBe('public, max-age=60');
    expect((await get('/products', ADMIN())).headers.get('cache-control')).toBe('no-store');
    expect((await get('/products/999999')).headers.get('cache-control')).toBe('no-store');
    expect((await get('/products?sort=nope')).headers.get('cache-control')).toBe('no-store');
  });

  it('/api/v1/products is the same resource, with the same notice', async () => {
    for (const [versioned, plain] of [
      ['/api/v1/products?category=books&sort=name', '/products?category=books&sort=name'],
      ['/api/v1/products/5', '/products/5'],
    ]) {
      const a = await get(versioned!);
      const b = await get(plain!);
      expect(a.status).toBe(200);
      expect(a.body).toEqual(b.body);
      expectDeprecated(a.headers, true);
    }
  });

  it('the Link header leads to the migration guide', async () => {
    const res = await fetch(new URL('/docs/migrations/v1-to-v2.md', url));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('price_cents');
  });
});

describe('products v2: money in integer cents', () => {
  it('/api/v2/products: same page and meta, price_cents instead of price, no deprecation', async () => {
    const v1 = await get<Page<ProductV1>>('/products?category=books&sort=price&order=desc&limit=3');
    const v2 = await get<Page<ProductV2>>('/api/v2/products?category=books&sort=price&order=desc&limit=3');
    expect(v2.status).toBe(200);
    expect(v2.body.meta).toEqual(v1.body.meta);
    expect(v2.body.data).toEqual(v1.body.data.map(({ price, ...p }) => ({ ...p, price_cents: Math.round(price * 100) })));
    expect(v2.body.data[0]).toMatchObject({ name: 'Domain-Driven Design', price_cents: 5499 });
    expectDeprecated(v2.headers, false);
    expect(v2.headers.get('vary')).toBe('Accept');
  });

  it('the v2 detail, by path, by Accept and by ?version=2', async () => {
    for (const [path, headers] of [
      ['/api/v2/products/3', {}],
      ['/products/3', { accept: 'application/vnd.halo.v2+json' }],
      ['/products/3?version=2', {}],
    ] as const) {
      const res = await get<{ data: ProductV2 }>(path, headers);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.body.data).toMatchObject({ id: 3, name: 'Chess Set', price_cents: 1999 });
      expect(res.body.data).not.toHaveProperty('price');
      expectDeprecated(res.headers, false);
    }
  });

  it('an unknown version is 400; a route without a v2 is 404', async () => {
    for (const [path, headers] of [
      ['/api/v9/products', {}],
      ['/products', { accept: 'application/vnd.halo.v9+json' }],
      ['/products?version=abc', {}],
    ] as const) {
      expect({ path, ...(await get(path, headers)) }).toMatchObject({ path, status: 400, body: { error: 'Unsupported API version' } });
    }
    expect(await get('/api/v2/hello')).toMatchObject({ status: 404, body: { error: 'Not found' } });
    expect(await get('/api/v1/hello')).toMatchObject({ status: 200, body: { message: 'Halo Dunia!' } });
  });
});

describe('writes', () => {
  it('v1 CRUD with an admin token: 201, 200 (partial), 204, then 404', async () => {
    const created = await send('POST', '/products', { name: 'Kopi Luwak', category: 'food', price: 19.99 }, ADMIN());
    expect(created.status).toBe(201);
    expectDeprecated(created.headers, true);
    const p = created.body!.data as ProductV1;
    expect(p).toMatchObject({ name: 'Kopi Luwak', description: '', category: 'food', price: 19.99 });
    expect((await get<{ data: ProductV1 }>(`/products/${p.id}`)).body.data).toEqual(p);
    const updated = await send('PUT', `/products/${p.id}`, { price: 17.5 }, ADMIN());
    expect(updated.status).toBe(200);
    expect(updated.body!.data).toMatchObject({ name: 'Kopi Luwak', price: 17.5 });
    expect((await get<{ data: ProductV2 }>(`/api/v2/products/${p.id}`)).body.data.price_cents).toBe(1750);
    const deleted = await send('DELETE', `/products/${p.id}`, undefined, ADMIN());
    expect(deleted.status).toBe(204);
    expect(await get(`/products/${p.id}`)).toMatchObject({ status: 404 });
  });

  it('v2 CRUD takes price_cents', async () => {
    const created = await send('POST', '/api/v2/products', { name: 'Teh Botol', category: 'food', price_cents: 450 }, ADMIN());
    expect(created.status).toBe(201);
    expect(created.body!.data).toMatchObject({ name: 'Teh Botol', price_cents: 450 });
    const id = created.body!.data.id as number;
    expect((await send('PUT', `/api/v2/products/${id}`, { price_cents: 500 }, ADMIN())).body!.data.price_cents).toBe(500);
    expect((await get<{ data: ProductV1 }>(`/products/${id}`)).body.data.price).toBe(5);
    expect((await send('DELETE', `/api/v2/products/${id}`, undefined, ADMIN())).status).toBe(204);
  });

  it('401 without a token (at the gateway), 403 for a user, 400 naming the field', async () => {
    expect(await send('POST', '/products', { name: 'x', category: 'y', price: 1 })).toMatchObject({
      status: 401,
      body: { error: 'Token required' },
    });
    expect(await send('DELETE', '/products/1', undefined, { authorization: 'Bearer nope' })).toMatchObject({
      status: 401,
      body: { error: 'Invalid token' },
    });
    expect(await send('PUT', '/products/1', { price: 1 }, bearer('2', 'Alice', 'user'))).toMatchObject({
      status: 403,
      body: { error: 'Forbidden' },
    });
    expect(await send('POST', '/products', { name: 'x', category: 'y', price: 1.999 }, ADMIN())).toMatchObject({
      status: 400,
      body: { error: 'price must be a number >= 0 with at most 2 decimals' },
    });
    expect((await get<{ data: ProductV1 }>('/products/1')).body.data.price).toBe(12.5);
  });

  it('an API key with catalog:write may write; one without it may not', async () => {
    const login = await send('POST', '/auth/login', { email: 'admin@halo.local', password: 'admin-password' });
    expect(login.status).toBe(200);
    const admin = { authorization: `Bearer ${login.body!.token}` };
    const keyFor = async (scopes: string[]) => {
      const res = await send('POST', '/auth/api-keys', { name: `catalog e2e ${scopes.join(' ')}`, scopes }, admin);
      expect(res.status).toBe(201);
      return res.body!.data.key as string;
    };
    const writer = await keyFor(['catalog:write']);
    const reader = await keyFor(['profile:read']);
    const created = await send('POST', '/products', { name: 'By key', category: 'food', price: 1 }, { 'x-api-key': writer });
    expect(created.status).toBe(201);
    expect(await send('DELETE', `/products/${created.body!.data.id}`, undefined, { 'x-api-key': reader })).toMatchObject({
      status: 403,
      body: { error: 'Forbidden' },
    });
    expect((await send('DELETE', `/products/${created.body!.data.id}`, undefined, { 'x-api-key': writer })).status).toBe(204);
    expect(await send('POST', '/products', { name: 'x', category: 'y', price: 1 }, { 'x-api-key': 'hk_not-a-key' })).toMatchObject({
      status: 401,
      body: { error: 'Invalid API key' },
    });
  });
});

describe('GraphQL products through the gateway', () => {
  it('products(...) matches REST and is cacheable for 60 s', async () => {
    const { status, headers, body } = await gql(
      url,
      '{ products(category: "electronics", sort: PRICE, order: ASC, limit: 3, page: 2) { data { id name price } meta { page limit total totalPages hasNext hasPrev } } }',
    );
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const rest = await get<Page<ProductV1>>('/products?category=electronics&sort=price&order=asc&limit=3&page=2');
    expect(body.data.products.meta).toEqual(rest.body.meta);
    expect(body.data.products.data).toEqual(rest.body.data.map((p) => ({ id: String(p.id), name: p.name, price: p.price })));
    expect(headers.get('cache-control')).toBe('max-age=60, public');
  });

  it('product(id), the connection, and GET /graphql carry the same hint; a token makes it private', async () => {
    const one = await gql(url, '{ product(id: "3") { name price } }');
    expect(one.body.data).toEqual({ product: { name: 'Chess Set', price: 19.99 } });
    expect(one.headers.get('cache-control')).toBe('max-age=60, public');
    const conn = await gql(url, '{ productConnection(first: 5) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }');
    expect(conn.body.data.productConnection.edges).toHaveLength(5);
    expect(conn.headers.get('cache-control')).toBe('max-age=60, public');
    const viaGet = await fetch(`${url}/graphql?query=${encodeURIComponent('{ products { meta { total } } }')}`);
    expect(viaGet.headers.get('cache-control')).toBe('max-age=60, public');
    expect(((await viaGet.json()) as { data: { products: { meta: { total: number } } } }).data.products.meta.total).toBe(42);
    const authed = await gql(url, '{ products { meta { total } } }', undefined, ADMIN());
    expect(authed.headers.get('cache-control')).toBe('max-age=60, private');
  });

  it('mixing with an uncached subgraph field, or an error, is no-store', async () => {
    expect((await gql(url, '{ products { meta { total } } users { id } }')).headers.get('cache-control')).toBe('no-store');
    expect((await gql(url, '{ product(id: "999999") { id } }')).headers.get('cache-control')).toBe('no-store');
  });

  it('mutations need a caller (401 at the gateway) and an admin', async () => {
    const anonymous = await gql(url, 'mutation { createProduct(input: { name: "x", category: "y", price: 1 }) { id } }');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const user = await gql(url, 'mutation { deleteProduct(id: "1") }', undefined, bearer('2', 'Alice', 'user'));
    expect(user.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const created = await gql(
      url,
      'mutation { createProduct(input: { name: "GQL", category: "food", price: 2.5 }) { id price } }',
      undefined,
      ADMIN(),
    );
    expect(created.body.data.createProduct.price).toBe(2.5);
    const deleted = await gql(url, `mutation { deleteProduct(id: "${created.body.data.createProduct.id}") }`, undefined, ADMIN());
    expect(deleted.body.data.deleteProduct).toBe(created.body.data.createProduct.id);
  });
});
