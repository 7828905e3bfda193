import { randomUUID } from 'node:crypto';
import { startE2ESystem } from './helpers';

/**
 * 201 Created names what it created (RFC 9110 §15.3.2): every REST creation answers `Location`,
 * the created resource's URL path as a client addresses it through the gateway, and that path
 * answers. The whole system on the real Postgres (throwaway schemas).
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let admin: string;

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true });
  admin = (await send('POST', '/auth/login', { email: 'admin@halo.local', password: 'admin-password' })).body!.token as string;
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${sys.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, location: res.headers.get('location'), body: text ? (JSON.parse(text) as Record<string, any>) : null }; // any: asserted per test
}

const asAdmin = () => ({ authorization: `Bearer ${admin}` });

describe('POST → 201 with Location, and the Location answers', () => {
  it('POST /products → /products/<id> (v1)', async () => {
    const made = await send('POST', '/products', { name: 'Loc v1', category: 'books', price: 1.5 }, asAdmin());
    expect([made.status, made.location]).toEqual([201, `/products/${made.body!.data.id}`]);
    const read = await send('GET', made.location!);
    expect([read.status, read.body!.data]).toEqual([200, made.body!.data]);
  });

  it('POST /api/v2/products (and ?version=2) → /api/v2/products/<id>, read back as v2', async () => {
    for (const path of ['/api/v2/products', '/products?version=2']) {
      const made = await send('POST', path, { name: 'Loc v2', category: 'books', price_cents: 150 }, asAdmin());
      expect([path, made.status, made.location]).toEqual([path, 201, `/api/v2/products/${made.body!.data.id}`]);
      const read = await send('GET', made.location!);
      expect([read.status, read.body!.data]).toEqual([200, made.body!.data]);
      expect(read.body!.data.price_cents).toBe(150);
    }
  });

  it('POST /api/orders → /api/orders/<id>; the repeat (200, nothing created) has none', async () => {
    const order = { product_id: 1, client_order_id: `loc-${randomUUID()}` };
    const made = await send('POST', '/api/orders', order, asAdmin());
    expect([made.status, made.location]).toEqual([201, `/api/orders/${made.body!.data.id}`]);
    const read = await send('GET', made.location!, undefined, asAdmin());
    expect([read.status, read.body!.data]).toEqual([200, made.body!.data]);
    const again = await send('POST', '/api/orders', order, asAdmin());
    expect([again.status, again.location]).toEqual([200, null]);
  });

  it('POST /auth/register → /profile, the new user’s own resource', async () => {
    const email = `loc-${randomUUID()}@e2e.test`;
    const made = await send('POST', '/auth/register', { name: 'Loc', email, password: 'password123' });
    expect([made.status, made.location]).toEqual([201, '/profile']);
    const { token } = (await send('POST', '/auth/login', { email, password: 'password123' })).body!;
    const read = await send('GET', made.location!, undefined, { authorization: `Bearer ${token as string}` });
    expect([read.status, read.body!.id, read.body!.email]).toEqual([200, made.body!.user.id, email]);
  });

  it('POST /auth/api-keys → /auth/api-keys/<id>, which DELETE revokes', async () => {
    const made = await send('POST', '/auth/api-keys', { name: 'loc', scopes: ['catalog:write'] }, asAdmin());
    expect([made.status, made.location]).toEqual([201, `/auth/api-keys/${made.body!.data.id}`]);
    expect((await send('DELETE', made.location!, undefined, asAdmin())).status).toBe(204);
    const listed = (await send('GET', '/auth/api-keys', undefined, asAdmin())).body!.data as { id: number; revoked: boolean }[];
    expect(listed.find((k) => k.id === made.body!.data.id)?.revoked).toBe(true);
  });

  it('the served OpenAPI document declares Location on each of these 201s', async () => {
    const doc = (await send('GET', '/openapi.json')).body!;
    for (const [path, method] of [
      ['/products', 'post'],
      ['/api/v2/products', 'post'],
      ['/api/orders', 'post'],
      ['/api/payments', 'post'],
      ['/auth/register', 'post'],
      ['/auth/api-keys', 'post'],
    ]) {
      const header = doc.paths[path!][method!].responses['201'].headers.Location;
      expect([path, header?.required, header?.schema]).toEqual([path, true, { type: 'string', format: 'uri-reference' }]);
    }
  });
});
