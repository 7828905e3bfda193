import { startE2ESystem } from './helpers';

/**
 * What the gateway adds to, or takes from, a service's answer on its way through the REST proxy,
 * with the real gateway and services: a service's own 429 (auth's per-email login lockout) must
 * not carry the gateway's RateLimit fields, which describe another limit; a version negotiated on
 * the unversioned path is labelled as its own media type, as the OpenAPI document describes it.
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

const post = (path: string, body: unknown) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe("a service's own 429", () => {
  it("auth's login lockout keeps its Retry-After, without the gateway's RateLimit fields", async () => {
    const email = 'lockout@example.com';
    expect((await post('/auth/register', { name: 'Lock', email, password: 'correct-horse' })).status).toBe(201);
    // The gateway's limits admit these: its fields are on every answer it let through.
    for (let i = 0; i < 5; i++) {
      const refused = await post('/auth/login', { email, password: `wrong-${i}` });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('ratelimit')).toMatch(/^"anonymous";r=\d+;t=\d+$/);
    }
    const blocked = await post('/auth/login', { email, password: 'correct-horse' });
    expect(blocked.status).toBe(429);
    expect(await blocked.json()).toEqual({ error: 'Too many attempts' });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // The limit that refused is auth's: the gateway's quota left (on another limit) is not said.
    expect(blocked.headers.get('ratelimit')).toBeNull();
    expect(blocked.headers.get('ratelimit-policy')).toBeNull();
  });
});

describe('a version negotiated on the unversioned path', () => {
  it.each([
    ['/products?limit=2', { accept: 'application/vnd.halo.v2+json' }],
    ['/products?limit=2&version=2', {}],
  ])('%s %j answers v2 as application/vnd.halo.v2+json', async (path, headers: Record<string, string>) => {
    const res = await fetch(`${url}${path}`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/vnd\.halo\.v2\+json(;|$)/);
    const page = (await res.json()) as { data: Record<string, unknown>[] };
    expect(page.data[0]).toHaveProperty('price_cents');
    expect(page.data[0]).not.toHaveProperty('price');
  });

  it('v1 there, and v2 at /api/v2, stay application/json', async () => {
    for (const path of ['/products?limit=2', '/api/v2/products?limit=2']) {
      expect((await fetch(`${url}${path}`)).headers.get('content-type')).toMatch(/^application\/json(;|$)/);
    }
  });
});
