import { AS, at, call, gql, insertProducts, startTestCatalog, type InsertedProduct, type TestCatalog } from './helpers';

/** The catalog subgraph, called the way the gateway calls it (POST JSON to /graphql). */

let t: TestCatalog;

interface Connection {
  edges: { cursor: string; node: { id: string; category: string } }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}
let products: InsertedProduct[];

const PAGE =
  'query($page: Int, $limit: Int, $category: String, $sort: ProductSort, $order: SortOrder) { products(page: $page, limit: $limit, category: $category, sort: $sort, order: $order) { data { id name category price createdAt updatedAt description } meta { page limit total totalPages hasNext hasPrev } } }';
const CONNECTION =
  'query($first: Int, $after: String, $category: String) { productConnection(first: $first, after: $after, category: $category) { edges { cursor node { id category } } pageInfo { hasNextPage endCursor } } }';

beforeAll(async () => {
  t = await startTestCatalog();
  products = await insertProducts(t.db, [
    { name: 'Kettle', category: 'home', price: 3000, createdAt: at(5) },
    { name: 'Atlas', category: 'books', price: 1500, createdAt: at(1) },
    { name: 'Chess', category: 'games', price: 1999, createdAt: at(9) },
    { name: 'Zen', category: 'books', price: 1500, createdAt: at(3) },
    { name: 'Go', category: 'games', price: 2500, createdAt: at(2) },
    { name: 'Lamp', category: 'home', price: 4550, createdAt: at(7) },
    { name: 'Bumi', category: 'books', price: 1250, createdAt: at(8) },
  ]);
});

afterAll(async () => {
  await t?.close();
});

describe('products(page, limit, category, sort, order)', () => {
  it('defaults like REST: page 1, 10 per page, id order', async () => {
    const { status, body } = await gql(t.base, PAGE);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(body.data!.products.data.map((p: { id: string }) => Number(p.id))).toEqual(products.map((p) => p.id));
    expect(body.data!.products.meta).toEqual({ page: 1, limit: 10, total: 7, totalPages: 1, hasNext: false, hasPrev: false });
  });

  it('serves the same rows and meta as REST GET /products (one use case)', async () => {
    for (const [vars, query] of [
      [{ category: 'books', sort: 'PRICE', order: 'DESC', limit: 2, page: 1 }, 'category=books&sort=price&order=desc&limit=2&page=1'],
      [{ sort: 'NAME', limit: 3, page: 2 }, 'sort=name&limit=3&page=2'],
      [{ sort: 'CREATED_AT', order: 'DESC' }, 'sort=created_at&order=desc'],
      [{ page: 0, limit: -4 }, 'page=0&limit=-4'],
      [{ limit: 5000, page: 9 }, 'limit=5000&page=9'],
    ] as const) {
      const rest = await call(t.base, 'GET', `/products?${query}`);
      const { body } = await gql(t.base, PAGE, vars);
      expect(body.errors).toBeUndefined();
      const page = body.data!.products;
      expect(page.meta).toEqual(rest.body!.meta);
      expect(page.data).toEqual(
        rest.body!.data.map((p: Record<string, unknown>) => ({
          id: String(p.id),
          name: p.name,
          category: p.category,
          description: p.description,
          price: p.price,
          createdAt: p.created_at,
          updatedAt: p.updated_at,
        })),
      );
    }
  });

  it('books by price desc: ties broken by id, descending', async () => {
    const { body } = await gql(t.base, PAGE, { category: 'books', sort: 'PRICE', order: 'DESC' });
    expect(body.data!.products.data.map((p: { name: string; price: number }) => [p.name, p.price])).toEqual([
      ['Zen', 15],
      ['Atlas', 15],
      ['Bumi', 12.5],
    ]);
  });

  it('an unknown sort is refused by the schema itself', async () => {
    const { status, body } = await gql(t.base, '{ products(sort: CATEGORY) { meta { total } } }');
    expect(status).toBe(400);
    expect(body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });
});

describe('product(id)', () => {
  it('answers the product', async () => {
    const zen = products[3]!;
    const { body } = await gql(t.base, 'query($id: ID!) { product(id: $id) { id name price category } }', { id: String(zen.id) });
    expect(body).toEqual({ data: { product: { id: String(zen.id), name: 'Zen', price: 15, category: 'books' } } });
  });

  it('unknown → HTTP 200, null and NOT_FOUND; not an id → BAD_USER_INPUT', async () => {
    const missing = await gql(t.base, '{ product(id: "999999") { id } }');
    expect(missing.status).toBe(200);
    expect(missing.body.data).toEqual({ product: null });
    expect(missing.body.errors?.[0]).toMatchObject({ message: 'Not found', path: ['product'], extensions: { code: 'NOT_FOUND' } });
    const bad = await gql(t.base, '{ product(id: "1 OR 1=1") { id } }');
    expect(bad.body.errors?.[0]).toMatchObject({ message: 'Invalid id', extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('several products in one request are one SQL statement (DataLoader)', async () => {
    const [a, b, c] = products;
    const before = t.db.stats.queries;
    const { body } = await gql(
      t.base,
      `{ a: product(id: "${a!.id}") { name } b: product(id: "${b!.id}") { name } c: product(id: "${c!.id}") { name } }`,
    );
    expect(body.data).toEqual({ a: { name: 'Kettle' }, b: { name: 'Atlas' }, c: { name: 'Chess' } });
    expect(t.db.stats.queries - before).toBe(1);
  });

  it('entity references from other subgraphs are batched too', async () => {
    const before = t.db.stats.queries;
    const { body } = await gql(t.base, 'query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { id name price } } }', {
      r: [...products.slice(0, 4).map((p) => ({ __typename: 'Product', id: String(p.id) })), { __typename: 'Product', id: '999999' }],
    });
    expect(body.data!._entities.map((e: { name: string } | null) => e?.name ?? null)).toEqual(['Kettle', 'Atlas', 'Chess', 'Zen', null]);
    expect(t.db.stats.queries - before).toBe(1);
  });
});

describe('productConnection(first, after, category)', () => {
  it('pages through every product in id order with opaque cursors', async () => {
    const seen: number[] = [];
    let after: string | null = null;
    for (let i = 0; i < 10; i++) {
      const { body } = await gql<{ productConnection: Connection }>(t.base, CONNECTION, { first: 3, after });
      expect(body.errors).toBeUndefined();
      const conn: Connection = body.data!.productConnection;
      seen.push(...conn.edges.map((e) => Number(e.node.id)));
      for (const e of conn.edges) expect(e.cursor).not.toMatch(/^\d+$/);
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(seen).toEqual(products.map((p) => p.id));
  });

  it('filters by category', async () => {
    const { body } = await gql(t.base, CONNECTION, { category: 'games' });
    expect(body.data!.productConnection.edges.map((e: { node: { category: string } }) => e.node.category)).toEqual(['games', 'games']);
    expect(body.data!.productConnection.pageInfo.hasNextPage).toBe(false);
  });

  it('a forged cursor or a first over 100 → BAD_USER_INPUT', async () => {
    for (const [vars, message] of [
      [{ after: Buffer.from('product:1 OR 1=1').toString('base64url') }, 'Invalid cursor'],
      [{ after: 'not-a-cursor' }, 'Invalid cursor'],
      [{ first: 101 }, 'first must be between 0 and 100'],
    ] as const) {
      const { body } = await gql(t.base, CONNECTION, vars);
      expect(body.errors?.[0]).toMatchObject({ message, extensions: { code: 'BAD_USER_INPUT' } });
    }
  });
});

describe('cache hints: the subgraph sends Cache-Control for the gateway to combine', () => {
  it.each([
    ['products with meta', '{ products { data { id name } meta { total hasNext } } }'],
    ['products meta only', '{ products { meta { total } } }'],
    ['productConnection', '{ productConnection(first: 2) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }'],
    ['product', `{ product(id: "1") { id name price } }`],
  ])('%s → public, 60 s', async (_label, query) => {
    const res = await gql(t.base, query.replace('"1"', `"${products[0]!.id}"`));
    expect(res.body.errors).toBeUndefined();
    expect(res.headers.get('cache-control')).toBe('max-age=60, public');
  });

  it('an error, a mutation or __typename alone → no-store', async () => {
    expect((await gql(t.base, '{ product(id: "999999") { id } }')).headers.get('cache-control')).toBe('no-store');
    expect((await gql(t.base, '{ __typename }')).headers.get('cache-control')).toBe('no-store');
    const created = await gql(
      t.base,
      'mutation { createProduct(input: { name: "Tmp", category: "tmp", price: 1 }) { id } }',
      undefined,
      AS.admin(),
    );
    expect(created.body.errors).toBeUndefined();
    expect(created.headers.get('cache-control')).toBe('no-store');
    await gql(t.base, `mutation { deleteProduct(id: "${created.body.data!.createProduct.id}") }`, undefined, AS.admin());
  });
});

describe('mutations', () => {
  const CREATE = 'mutation($input: NewProduct!) { createProduct(input: $input) { id name description category price createdAt } }';

  it('create → update (partial) → delete with an admin, or an API key with catalog:write', async () => {
    for (const as of [AS.admin, AS.writeKey]) {
      const created = await gql(t.base, CREATE, { input: { name: 'Rice Cooker', category: 'home', price: 49.9 } }, as());
      expect(created.body.errors).toBeUndefined();
      const p = created.body.data!.createProduct;
      expect(p).toMatchObject({ name: 'Rice Cooker', description: '', category: 'home', price: 49.9 });
      const updated = await gql(
        t.base,
        'mutation($id: ID!) { updateProduct(id: $id, input: { price: 39.9, description: "On sale" }) { name price description } }',
        { id: p.id },
        as(),
      );
      expect(updated.body.data).toEqual({ updateProduct: { name: 'Rice Cooker', price: 39.9, description: 'On sale' } });
      const deleted = await gql(t.base, 'mutation($id: ID!) { deleteProduct(id: $id) }', { id: p.id }, as());
      expect(deleted.body.data).toEqual({ deleteProduct: p.id });
      expect((await gql(t.base, `{ product(id: "${p.id}") { id } }`)).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
  });

  it.each([
    ['a user', 'FORBIDDEN', 'Forbidden', AS.user],
    ['an API key without catalog:write', 'FORBIDDEN', 'Forbidden', AS.otherKey],
    ['nobody', 'UNAUTHENTICATED', 'Token required', () => ({})],
  ])('%s → %s, and nothing is written', async (_label, code, message, as) => {
    const before = (await call(t.base, 'GET', '/products')).body!.meta.total;
    const { status, body } = await gql(t.base, CREATE, { input: { name: 'No', category: 'x', price: 1 } }, as());
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toMatchObject({ message, extensions: { code } });
    for (const m of [
      `mutation { updateProduct(id: "${products[0]!.id}", input: { price: 0 }) { id } }`,
      `mutation { deleteProduct(id: "${products[0]!.id}") }`,
    ]) {
      expect((await gql(t.base, m, undefined, as())).body.errors?.[0]?.extensions?.code).toBe(code);
    }
    expect((await call(t.base, 'GET', '/products')).body!.meta.total).toBe(before);
  });

  it('an invalid token stops the whole request with HTTP 401', async () => {
    const { status, body } = await gql(t.base, '{ products { meta { total } } }', undefined, AS.badToken());
    expect(status).toBe(401);
    expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('validation and unknown ids come back as BAD_USER_INPUT / NOT_FOUND with the REST messages', async () => {
    for (const [input, message] of [
      [{ name: ' ', category: 'x', price: 1 }, 'name is required'],
      [{ name: 'x', category: '', price: 1 }, 'category is required'],
      [{ name: 'x', category: 'x', price: 1.999 }, 'price must be a number >= 0 with at most 2 decimals'],
      [{ name: 'x', category: 'x', price: -1 }, 'price must be a number >= 0 with at most 2 decimals'],
    ] as const) {
      const { body } = await gql(t.base, CREATE, { input }, AS.admin());
      expect(body.errors?.[0]).toMatchObject({ message, extensions: { code: 'BAD_USER_INPUT' } });
    }
    const empty = await gql(t.base, `mutation { updateProduct(id: "${products[0]!.id}", input: {}) { id } }`, undefined, AS.admin());
    expect(empty.body.errors?.[0]).toMatchObject({ message: 'No fields to update', extensions: { code: 'BAD_USER_INPUT' } });
    const unknown = await gql(t.base, 'mutation { updateProduct(id: "999999", input: { price: 1 }) { id } }', undefined, AS.admin());
    expect(unknown.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const gone = await gql(t.base, 'mutation { deleteProduct(id: "999999") }', undefined, AS.admin());
    expect(gone.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});
