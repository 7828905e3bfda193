import { AS, at, call, insertProducts, startTestCatalog, type InsertedProduct, type Row, type TestCatalog } from './helpers';

/** REST v1 (the unversioned routes) and v2 (`/v2/products`, what the gateway maps /api/v2 to). */

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let t: TestCatalog;
let products: InsertedProduct[];

/**
 * 25 products: 10 books, 8 games, 7 electronics. Id order, time order, name order and price
 * order all disagree, and some prices tie (so the id tie-break shows).
 */
const ROWS: Row[] = [
  { name: 'Mahabharata', category: 'books', price: 2500, createdAt: at(40) },
  { name: 'Chess', category: 'games', price: 1999, createdAt: at(3) },
  { name: 'Keyboard', category: 'electronics', price: 8900, createdAt: at(17) },
  { name: 'Atlas', category: 'books', price: 1500, createdAt: at(12) },
  { name: 'Go', category: 'games', price: 1999, createdAt: at(50) },
  { name: 'Zettelkasten', category: 'books', price: 1500, createdAt: at(1) },
  { name: 'Mouse', category: 'electronics', price: 2499, createdAt: at(33) },
  { name: 'Bumi Manusia', category: 'books', price: 1250, createdAt: at(25) },
  { name: 'Catan', category: 'games', price: 4400, createdAt: at(9) },
  { name: 'Hub', category: 'electronics', price: 3450, createdAt: at(44) },
  { name: 'Refactoring', category: 'books', price: 4499, createdAt: at(7) },
  { name: 'Azul', category: 'games', price: 3999, createdAt: at(29) },
  { name: 'Laskar Pelangi', category: 'books', price: 999, createdAt: at(15) },
  { name: 'Webcam', category: 'electronics', price: 5990, createdAt: at(2) },
  { name: 'Dixit', category: 'games', price: 3250, createdAt: at(38) },
  { name: 'Release It', category: 'books', price: 3495, createdAt: at(21) },
  { name: 'Speaker', category: 'electronics', price: 4999, createdAt: at(11) },
  { name: 'Pandemic', category: 'games', price: 3999, createdAt: at(46) },
  { name: 'Gadis Kretek', category: 'books', price: 1175, createdAt: at(5) },
  { name: 'Monitor', category: 'electronics', price: 24900, createdAt: at(31) },
  { name: 'Codenames', category: 'games', price: 1999, createdAt: at(19) },
  { name: 'Database Internals', category: 'books', price: 4999, createdAt: at(48) },
  { name: 'Cable', category: 'electronics', price: 750, createdAt: at(0) },
  { name: 'Wingspan', category: 'games', price: 5999, createdAt: at(27) },
  { name: 'Clean Architecture', category: 'books', price: 2999, createdAt: at(36) },
];
const TOTAL = ROWS.length;

/** The order the API promises: by the key, ties by id, both in the requested direction. */
function expected(opts: { category?: string; sort?: 'id' | 'name' | 'price' | 'created_at'; order?: 'asc' | 'desc' } = {}) {
  const key = {
    id: (p: InsertedProduct) => p.id,
    name: (p: InsertedProduct) => p.name,
    price: (p: InsertedProduct) => p.price,
    created_at: (p: InsertedProduct) => p.createdAt,
  }[opts.sort ?? 'id'];
  const dir = opts.order === 'desc' ? -1 : 1;
  return products
    .filter((p) => !opts.category || p.category === opts.category)
    .sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      // Byte order, as the database's C collation compares text.
      const c = ka < kb ? -1 : ka > kb ? 1 : a.id - b.id;
      return c * dir;
    })
    .map((p) => p.id);
}

const get = (path: string, headers?: Record<string, string>) => call(t.base, 'GET', path, headers ? { headers } : {});
const ids = (res: { body?: Record<string, any> }) => (res.body!.data as { id: number }[]).map((p) => p.id);

/** An error answer is exactly `{error}`: no stack, no SQL, nothing else. */
function expectError(res: { status: number; body?: Record<string, unknown>; text: string }, status: number, error: string) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { error } });
  expect(res.text).not.toMatch(/stack|SELECT|syntax|at \w+ \(/i);
}

async function productCount(): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>('SELECT count(*) AS n FROM products');
  return rows[0]!.n;
}

beforeAll(async () => {
  t = await startTestCatalog();
  products = await insertProducts(t.db, ROWS);
});

afterAll(async () => {
  await t?.close();
});

describe('GET /products: pagination', () => {
  it('defaults to page 1 of 10, in id order, with exact meta', async () => {
    const res = await get('/products');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(ids(res)).toEqual(expected().slice(0, 10));
    expect(res.body!.meta).toEqual({ page: 1, limit: 10, total: TOTAL, totalPages: 3, hasNext: true, hasPrev: false });
  });

  it('skips (page - 1) * limit records', async () => {
    const res = await get('/products?page=2&limit=7');
    expect(ids(res)).toEqual(expected().slice(7, 14));
    expect(res.body!.meta).toEqual({ page: 2, limit: 7, total: TOTAL, totalPages: 4, hasNext: true, hasPrev: true });
  });

  it('the last, partial page has no next', async () => {
    const res = await get('/products?page=3');
    expect(ids(res)).toEqual(expected().slice(20));
    expect(res.body!.meta).toEqual({ page: 3, limit: 10, total: TOTAL, totalPages: 3, hasNext: false, hasPrev: true });
  });

  it('a last page that is exactly full has no next (page * limit == total)', async () => {
    const res = await get('/products?page=5&limit=5');
    expect(ids(res)).toEqual(expected().slice(20, 25));
    expect(res.body!.meta).toEqual({ page: 5, limit: 5, total: TOTAL, totalPages: 5, hasNext: false, hasPrev: true });
  });

  it('a page past the end is empty, with the real total and a previous page', async () => {
    for (const [query, page, limit] of [
      ['page=6&limit=5', 6, 5],
      ['page=99', 99, 10],
      ['page=26&limit=1', 26, 1],
    ] as const) {
      const res = await get(`/products?${query}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        data: [],
        meta: { page, limit, total: TOTAL, totalPages: Math.ceil(TOTAL / limit), hasNext: false, hasPrev: true },
      });
    }
  });

  it('an empty result has zero pages', async () => {
    const res = await get('/products?category=toys');
    expect(res.body).toEqual({ data: [], meta: { page: 1, limit: 10, total: 0, totalPages: 0, hasNext: false, hasPrev: false } });
    const later = await get('/products?category=toys&page=3');
    expect(later.body!.meta).toEqual({ page: 3, limit: 10, total: 0, totalPages: 0, hasNext: false, hasPrev: true });
  });

  it('caps limit at 100', async () => {
    for (const limit of ['100', '101', '1000', '99999']) {
      const res = await get(`/products?limit=${limit}`);
      expect(res.body!.meta).toEqual({ page: 1, limit: 100, total: TOTAL, totalPages: 1, hasNext: false, hasPrev: false });
      expect(ids(res)).toEqual(expected());
    }
  });

  it('limit=1 pages one record at a time', async () => {
    const res = await get('/products?page=25&limit=1');
    expect(ids(res)).toEqual([expected()[24]]);
    expect(res.body!.meta).toEqual({ page: 25, limit: 1, total: TOTAL, totalPages: 25, hasNext: false, hasPrev: true });
  });

  // Unparsable or 0 → the default (spec); negatives, decimals, exponents, blanks, repeats and
  // integers beyond 2^53 count as unparsable.
  const FALLBACKS = ['0', 'abc', '-1', '1.5', '', '%20', '1e1', '+2', '0x10', '99999999999999999999', '2&PARAM=3'];
  // ('+2' arrives as ' 2': a '+' in a query string is a space.)

  it.each(FALLBACKS)('page=%s falls back to page 1', async (value) => {
    const res = await get(`/products?page=${value.replace('PARAM', 'page')}&limit=4`);
    expect(res.status).toBe(200);
    expect(res.body!.meta).toMatchObject({ page: 1, limit: 4, hasPrev: false });
    expect(ids(res)).toEqual(expected().slice(0, 4));
  });

  it.each(FALLBACKS)('limit=%s falls back to 10', async (value) => {
    const res = await get(`/products?limit=${value.replace('PARAM', 'limit')}&page=2`);
    expect(res.status).toBe(200);
    expect(res.body!.meta).toEqual({ page: 2, limit: 10, total: TOTAL, totalPages: 3, hasNext: true, hasPrev: true });
    expect(ids(res)).toEqual(expected().slice(10, 20));
  });

  it('leading zeros are still an integer', async () => {
    const res = await get('/products?page=002&limit=05');
    expect(res.body!.meta).toMatchObject({ page: 2, limit: 5 });
  });
});

describe('GET /products: filter and sort', () => {
  it('filters by exact category', async () => {
    const res = await get('/products?category=games');
    expect(ids(res)).toEqual(expected({ category: 'games' }));
    expect(res.body!.meta).toEqual({ page: 1, limit: 10, total: 8, totalPages: 1, hasNext: false, hasPrev: false });
    for (const p of res.body!.data) expect(p.category).toBe('games');
    // Exact: no prefix, case or trimming games.
    for (const near of ['game', 'Games', 'GAMES', 'games%20', 'gam%25'])
      expect((await get(`/products?category=${near}`)).body!.meta.total).toBe(0);
  });

  it('category + sort=price + order=desc, ties broken by id in the same direction', async () => {
    const res = await get('/products?category=books&sort=price&order=desc');
    expect(ids(res)).toEqual(expected({ category: 'books', sort: 'price', order: 'desc' }));
    const prices = res.body!.data.map((p: { price: number }) => p.price);
    expect(prices).toEqual([49.99, 44.99, 34.95, 29.99, 25, 15, 15, 12.5, 11.75, 9.99]);
    // Atlas (inserted before Zettelkasten) and Zettelkasten share 15.00: desc puts the higher id first.
    const tie = res.body!.data.filter((p: { price: number }) => p.price === 15).map((p: { name: string }) => p.name);
    expect(tie).toEqual(['Zettelkasten', 'Atlas']);
    expect(res.body!.meta).toEqual({ page: 1, limit: 10, total: 10, totalPages: 1, hasNext: false, hasPrev: false });
  });

  it('ascending price ties come in id order', async () => {
    const res = await get('/products?category=games&sort=price');
    expect(ids(res)).toEqual(expected({ category: 'games', sort: 'price', order: 'asc' }));
    expect(res.body!.data.slice(0, 3).map((p: { name: string }) => p.name)).toEqual(['Chess', 'Go', 'Codenames']);
  });

  it.each([
    ['name', 'asc'],
    ['name', 'desc'],
    ['created_at', 'asc'],
    ['created_at', 'desc'],
    ['price', 'asc'],
    ['id', 'desc'],
  ] as const)('sort=%s order=%s across pages', async (sort, order) => {
    const all = expected({ sort, order });
    const first = await get(`/products?sort=${sort}&order=${order}&limit=10`);
    const second = await get(`/products?sort=${sort}&order=${order}&limit=10&page=2`);
    const third = await get(`/products?sort=${sort}&order=${order}&limit=10&page=3`);
    expect([...ids(first), ...ids(second), ...ids(third)]).toEqual(all);
  });

  it('order without sort orders by id; sort without order is ascending', async () => {
    expect(ids(await get('/products?order=desc&limit=100'))).toEqual(expected({ order: 'desc' }));
    expect(ids(await get('/products?sort=created_at&limit=100'))).toEqual(expected({ sort: 'created_at' }));
  });

  it('filter + sort + pagination together', async () => {
    const res = await get('/products?category=electronics&sort=created_at&order=desc&limit=3&page=2');
    expect(ids(res)).toEqual(expected({ category: 'electronics', sort: 'created_at', order: 'desc' }).slice(3, 6));
    expect(res.body!.meta).toEqual({ page: 2, limit: 3, total: 7, totalPages: 3, hasNext: true, hasPrev: true });
  });

  it.each(['category', 'PRICE', 'price ', 'description', 'random()', 'price,id', '1'])('sort=%s → 400 Invalid sort', async (sort) => {
    expectError(await get(`/products?sort=${encodeURIComponent(sort)}`), 400, 'Invalid sort');
  });

  it.each(['up', 'DESC', 'descending', '1', 'asc,desc'])('order=%s → 400 Invalid order', async (order) => {
    expectError(await get(`/products?sort=price&order=${encodeURIComponent(order)}`), 400, 'Invalid order');
  });

  it('an empty sort, order or category means "not given"', async () => {
    const res = await get('/products?sort=&order=&category=&limit=100');
    expect(ids(res)).toEqual(expected());
  });

  it('both invalid → the sort is reported first; a repeated sort, order or category is a 400', async () => {
    expectError(await get('/products?sort=x&order=y'), 400, 'Invalid sort');
    expectError(await get('/products?sort=price&sort=name'), 400, 'Invalid sort');
    expectError(await get('/products?order=asc&order=asc'), 400, 'Invalid order');
    expectError(await get('/products?category=books&category=games'), 400, 'Invalid category');
  });

  it('HEAD is served where GET is; another method is 405 with Allow', async () => {
    const head = await fetch(`${t.base}/products`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const patch = await call(t.base, 'PATCH', '/products');
    expectError(patch, 405, 'Method not allowed');
    expect(patch.headers.get('allow')).toBe('GET, POST, HEAD');
  });
});

describe('GET /products/:id', () => {
  it('answers the product with every field; price is a JSON number with at most 2 decimals', async () => {
    const bumi = products.find((p) => p.name === 'Bumi Manusia')!;
    const res = await get(`/products/${bumi.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        id: bumi.id,
        name: 'Bumi Manusia',
        description: '',
        category: 'books',
        price: 12.5,
        created_at: bumi.createdAt,
        updated_at: bumi.createdAt,
      },
    });
    expect(res.text).toContain('"price":12.5,');
    const cheap = products.find((p) => p.name === 'Laskar Pelangi')!;
    expect((await get(`/products/${cheap.id}`)).text).toContain('"price":9.99,');
  });

  it('unknown → 404 Not found; not an integer → 400 Invalid id', async () => {
    expectError(await get('/products/999999'), 404, 'Not found');
    expectError(await get('/products/0'), 404, 'Not found');
    for (const id of ['abc', '1.5', '-1', '1e3', '%20', '9999999999999999', '%zz'])
      expectError(await get(`/products/${id}`), 400, 'Invalid id');
  });
});

describe('writes: authentication and authorisation', () => {
  const NEW = { name: 'Auth probe', category: 'games', price: 1 };

  it.each([
    ['no token', 401, 'Token required', {}],
    ['an empty bearer', 401, 'Token required', { authorization: 'Bearer ' }],
    ['a malformed token', 401, 'Invalid token', AS.badToken()],
    ['a token signed with another secret', 401, 'Invalid token', AS.foreign()],
    ['a user', 403, 'Forbidden', AS.user()],
    ['an admin API key without catalog:write', 403, 'Forbidden', AS.otherKey()],
    ['a user API key, even with catalog:write', 403, 'Forbidden', AS.userKey()],
  ] as const)('%s → %i %s on POST, PUT and DELETE, and nothing changes', async (_label, status, error, headers) => {
    const target = products[0]!;
    const before = await productCount();
    expectError(await call(t.base, 'POST', '/products', { body: NEW, headers }), status, error);
    expectError(await call(t.base, 'PUT', `/products/${target.id}`, { body: { price: 0 }, headers }), status, error);
    expectError(await call(t.base, 'DELETE', `/products/${target.id}`, { headers }), status, error);
    expectError(await call(t.base, 'POST', '/v2/products', { body: { ...NEW, price_cents: 1 }, headers }), status, error);
    expect(await productCount()).toBe(before);
    expect((await get(`/products/${target.id}`)).body!.data.price).toBe(target.price / 100);
  });

  it('authentication comes before validation and before the id', async () => {
    expectError(await call(t.base, 'POST', '/products', { body: {} }), 401, 'Token required');
    expectError(await call(t.base, 'PUT', '/products/abc', { body: {}, headers: AS.user() }), 403, 'Forbidden');
    expectError(await call(t.base, 'DELETE', '/products/999999', { headers: AS.otherKey() }), 403, 'Forbidden');
  });
});

describe('writes: create, update, delete', () => {
  it.each([
    ['an admin token', AS.admin],
    ['an admin API key with catalog:write', AS.writeKey],
  ])('with %s: POST 201 → GET → PUT (partial) 200 → DELETE 204 → 404', async (_label, as) => {
    const created = await call(t.base, 'POST', '/products', {
      body: { name: '  Kopi Luwak  ', description: 'Civet coffee', category: 'food', price: 19.99, id: 1, created_at: 'x', rating: 5 },
      headers: as(),
    });
    expect(created.status).toBe(201);
    const p = created.body!.data;
    expect(p).toEqual({
      id: expect.any(Number),
      name: 'Kopi Luwak',
      description: 'Civet coffee',
      category: 'food',
      price: 19.99,
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: p.created_at,
    });
    expect(p.id).toBeGreaterThan(products.at(-1)!.id);
    expect((await get(`/products/${p.id}`)).body).toEqual({ data: p });

    const updated = await call(t.base, 'PUT', `/products/${p.id}`, { body: { price: 21.5 }, headers: as() });
    expect(updated.status).toBe(200);
    expect(updated.body!.data).toEqual({ ...p, price: 21.5, updated_at: expect.stringMatching(ISO_UTC) });
    expect(Date.parse(updated.body!.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(p.created_at));

    const renamed = await call(t.base, 'PUT', `/products/${p.id}`, {
      body: { name: 'Kopi', description: '', category: 'drinks' },
      headers: as(),
    });
    expect(renamed.body!.data).toMatchObject({ name: 'Kopi', description: '', category: 'drinks', price: 21.5 });

    const deleted = await call(t.base, 'DELETE', `/products/${p.id}`, { headers: as() });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectError(await get(`/products/${p.id}`), 404, 'Not found');
    expectError(await call(t.base, 'DELETE', `/products/${p.id}`, { headers: as() }), 404, 'Not found');
    expectError(await call(t.base, 'PUT', `/products/${p.id}`, { body: { price: 1 }, headers: as() }), 404, 'Not found');
  });

  it('a new product appears in the list and the total', async () => {
    const created = await call(t.base, 'POST', '/products', { body: { name: 'Counted', category: 'toys', price: 0 }, headers: AS.admin() });
    expect(created.body!.data).toMatchObject({ price: 0, description: '' });
    const list = await get('/products?category=toys');
    expect(list.body!.meta.total).toBe(1);
    expect(ids(list)).toEqual([created.body!.data.id]);
    await call(t.base, 'DELETE', `/products/${created.body!.data.id}`, { headers: AS.admin() });
  });

  it('PUT with an invalid id is 400 Invalid id', async () => {
    expectError(await call(t.base, 'PUT', '/products/abc', { body: { price: 1 }, headers: AS.admin() }), 400, 'Invalid id');
    expectError(await call(t.base, 'DELETE', '/products/1.5', { headers: AS.admin() }), 400, 'Invalid id');
  });
});

describe('writes: validation names the field', () => {
  const base = { name: 'Valid', category: 'games', price: 10 };

  const PRICE = 'price must be a number >= 0 with at most 2 decimals';
  it.each([
    ['without name', 'name is required', { ...base, name: undefined }],
    ['with a blank name', 'name is required', { ...base, name: '   ' }],
    ['with a numeric name', 'name is required', { ...base, name: 42 }],
    ['with a 201-character name', 'name must be at most 200 characters', { ...base, name: 'x'.repeat(201) }],
    ['without category', 'category is required', { ...base, category: undefined }],
    ['with an empty category', 'category is required', { ...base, category: '' }],
    ['with a 51-character category', 'category must be at most 50 characters', { ...base, category: 'c'.repeat(51) }],
    ['with a numeric description', 'description must be a string', { ...base, description: 5 }],
    ['with a 5001-character description', 'description must be at most 5000 characters', { ...base, description: 'd'.repeat(5001) }],
    ['without price', 'price is required', { ...base, price: undefined }],
    ['with a null price', 'price is required', { ...base, price: null }],
    ['with a string price', PRICE, { ...base, price: '19.99' }],
    ['with a negative price', PRICE, { ...base, price: -0.01 }],
    ['with 3 decimals', PRICE, { ...base, price: 1.999 }],
    ['with 0.1 + 0.2', PRICE, { ...base, price: 0.1 + 0.2 }],
    ['with a boolean price', PRICE, { ...base, price: true }],
    ['with a price over numeric(12,2)', 'price must be at most 9999999999.99', { ...base, price: 1e10 }],
    ['with an array body', 'name is required', []],
    ['with a string body', 'name is required', '"a string"'],
  ])('POST %s → 400 %s', async (_label, error, body) => {
    expectError(await call(t.base, 'POST', '/products', { body, headers: AS.admin() }), 400, error);
  });

  it('the largest price and a zero price are accepted', async () => {
    const max = await call(t.base, 'POST', '/products', { body: { ...base, price: 9999999999.99 }, headers: AS.admin() });
    expect(max.body!.data.price).toBe(9999999999.99);
    await call(t.base, 'DELETE', `/products/${max.body!.data.id}`, { headers: AS.admin() });
  });

  it.each([
    [{}, 'No fields to update'],
    [{ id: 5, rating: 3 }, 'No fields to update'],
    [{ name: '' }, 'name is required'],
    [{ name: null }, 'name is required'],
    [{ category: 7 }, 'category is required'],
    [{ price: null }, PRICE],
    [{ price: 12.345 }, PRICE],
  ])('PUT %j → 400 %s, and nothing changes', async (body, error) => {
    const target = products[1]!;
    expectError(await call(t.base, 'PUT', `/products/${target.id}`, { body, headers: AS.admin() }), 400, error);
    expect((await get(`/products/${target.id}`)).body!.data).toMatchObject({ name: target.name, price: target.price / 100 });
  });

  it('malformed JSON → 400 Invalid JSON', async () => {
    expectError(await call(t.base, 'POST', '/products', { body: '{"name":', headers: AS.admin() }), 400, 'Invalid JSON');
  });
});

describe('v2 (/v2/products): money as integer cents', () => {
  it('lists with price_cents instead of price, same meta and order', async () => {
    const v1 = await get('/products?category=books&sort=price&order=desc&limit=4');
    const v2 = await get('/v2/products?category=books&sort=price&order=desc&limit=4');
    expect(v2.status).toBe(200);
    expect(v2.body!.meta).toEqual(v1.body!.meta);
    expect(v2.body!.data).toEqual(
      v1.body!.data.map(({ price, ...rest }: { price: number }) => ({ ...rest, price_cents: Math.round(price * 100) })),
    );
    for (const p of v2.body!.data) {
      expect(p).not.toHaveProperty('price');
      expect(Number.isInteger(p.price_cents)).toBe(true);
    }
  });

  it('detail, and the same errors as v1', async () => {
    const atlas = products.find((p) => p.name === 'Atlas')!;
    expect((await get(`/v2/products/${atlas.id}`)).body!.data).toMatchObject({ id: atlas.id, price_cents: 1500 });
    expectError(await get('/v2/products/999999'), 404, 'Not found');
    expectError(await get('/v2/products/abc'), 400, 'Invalid id');
    expectError(await get('/v2/products?sort=bogus'), 400, 'Invalid sort');
  });

  it('writes take price_cents; v1 shows the same product with price', async () => {
    const created = await call(t.base, 'POST', '/v2/products', {
      body: { name: 'Exact', category: 'games', price_cents: 1999 },
      headers: AS.writeKey(),
    });
    expect(created.status).toBe(201);
    expect(created.body!.data).toMatchObject({ name: 'Exact', price_cents: 1999 });
    const id = created.body!.data.id;
    expect((await get(`/products/${id}`)).body!.data.price).toBe(19.99);
    const updated = await call(t.base, 'PUT', `/v2/products/${id}`, { body: { price_cents: 1 }, headers: AS.admin() });
    expect(updated.body!.data.price_cents).toBe(1);
    expect((await get(`/products/${id}`)).body!.data.price).toBe(0.01);
    expect((await call(t.base, 'DELETE', `/v2/products/${id}`, { headers: AS.admin() })).status).toBe(204);
  });

  it.each([
    [{ name: 'x', category: 'games', price: 19.99 }, 'price_cents is required'],
    [{ name: 'x', category: 'games', price_cents: 19.99 }, 'price_cents must be an integer >= 0'],
    [{ name: 'x', category: 'games', price_cents: -1 }, 'price_cents must be an integer >= 0'],
    [{ name: 'x', category: 'games', price_cents: '1999' }, 'price_cents must be an integer >= 0'],
    [{ name: 'x', category: 'games', price_cents: 1e12 }, 'price_cents must be at most 999999999999'],
  ])('POST /v2/products %j → 400 %s', async (body, error) => {
    expectError(await call(t.base, 'POST', '/v2/products', { body, headers: AS.admin() }), 400, error);
  });
});

describe('SQL-injection-looking input never reaches SQL as code', () => {
  const attacks = [
    "'; DROP TABLE products; --",
    "1' OR '1'='1",
    'price; DELETE FROM products',
    '1 UNION SELECT * FROM pg_user',
    "books' --",
    '$1',
  ];

  it.each(attacks)('%s as sort / order / category / page / limit / id: 4xx or an empty page, never 500', async (attack) => {
    const q = encodeURIComponent(attack);
    expectError(await get(`/products?sort=${q}`), 400, 'Invalid sort');
    expectError(await get(`/products?order=${q}`), 400, 'Invalid order');
    const byCategory = await get(`/products?category=${q}`);
    expect(byCategory.body).toEqual({ data: [], meta: { page: 1, limit: 10, total: 0, totalPages: 0, hasNext: false, hasPrev: false } });
    const paged = await get(`/products?page=${q}&limit=${q}`);
    expect(paged.status).toBe(200);
    expect(paged.body!.meta).toMatchObject({ page: 1, limit: 10, total: await productCount() });
    expectError(await get(`/products/${q}`), 400, 'Invalid id');
    expectError(await call(t.base, 'PUT', `/products/${q}`, { body: { price: 1 }, headers: AS.admin() }), 400, 'Invalid id');
  });

  it('hostile text in a body is stored verbatim, and the table is intact', async () => {
    const before = await productCount();
    const name = "Robert'); DROP TABLE products;--";
    const created = await call(t.base, 'POST', '/products', { body: { name, category: "x' OR 1=1 --", price: 1 }, headers: AS.admin() });
    expect(created.status).toBe(201);
    expect(created.body!.data).toMatchObject({ name, category: "x' OR 1=1 --" });
    expect((await get(`/products?category=${encodeURIComponent("x' OR 1=1 --")}`)).body!.meta.total).toBe(1);
    expect(await productCount()).toBe(before + 1);
    await call(t.base, 'DELETE', `/products/${created.body!.data.id}`, { headers: AS.admin() });
    expect(await productCount()).toBe(before);
    expect(ids(await get('/products?limit=100'))).toEqual(expected());
  });
});
