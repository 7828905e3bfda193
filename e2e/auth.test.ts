import { gql, startE2ESystem } from './helpers';

/**
 * Accounts and tokens through the gateway's single port: the real gateway, auth and content
 * processes on the real Postgres (demo credentials seeded into throwaway schemas).
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

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** The refresh cookie's `name=value`, from a Set-Cookie list. */
function refreshCookie(res: Response): string {
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('refresh_token='));
  if (!cookie) throw new Error('no refresh_token cookie');
  return cookie.split(';')[0]!;
}

async function login(email: string, password: string) {
  const res = await post('/auth/login', { email, password });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { token: string; accessToken: string; user: { id: number; name: string } };
  return { ...body, cookie: refreshCookie(res) };
}

const decode = (jwt: string) => jwt.split('.').map((p, i) => (i < 2 ? JSON.parse(Buffer.from(p, 'base64url').toString()) : p));

describe('login, profile, refresh, logout', () => {
  it('logs in with the demo credentials and gets a JWT and an httpOnly refresh cookie', async () => {
    const res = await post('/auth/login', { email: 'alice@halo.local', password: 'password123' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; accessToken: string; user: object };
    expect(body.token).toBe(body.accessToken);
    expect(body.user).toEqual({ id: expect.any(Number), name: 'Alice' });
    const [header, claims] = decode(body.token);
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(claims).toMatchObject({ sub: String(body.user && (body.user as { id: number }).id), name: 'Alice', role: 'user' });
    expect(claims.exp - claims.iat).toBe(15 * 60);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('refresh_token='))!;
    expect(cookie).toMatch(/^refresh_token=[0-9a-f-]{36}; /);
    for (const attr of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/auth', 'Max-Age=2592000']) expect(cookie).toContain(attr);
  });

  it('wrong password and unknown email get the same 401', async () => {
    for (const body of [
      { email: 'bob@halo.local', password: 'wrong-password' },
      { email: 'nobody@halo.local', password: 'password123' },
    ]) {
      const res = await post('/auth/login', body);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: 'Email atau password salah' });
    }
  });

  it('GET /profile: 401 Token required / Invalid token at the gateway, 200 with the caller', async () => {
    const none = await fetch(`${url}/profile`);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ error: 'Token required' });
    const bad = await fetch(`${url}/profile`, { headers: { authorization: 'Bearer x.y.z' } });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({ error: 'Invalid token' });
    const { token } = await login('alice@halo.local', 'password123');
    const ok = await fetch(`${url}/profile`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    const profile = (await ok.json()) as Record<string, unknown>;
    expect(Object.keys(profile).sort()).toEqual(['avatar', 'created_at', 'email', 'id', 'name', 'role']);
    expect(profile).toMatchObject({ email: 'alice@halo.local', role: 'user' });
  });

  it('refresh rotates the cookie; reusing an old one revokes the family; logout ends the session', async () => {
    const first = await login('bob@halo.local', 'password123');
    const r1 = await post('/auth/refresh', {}, { cookie: first.cookie });
    expect(r1.status).toBe(200);
    const r1body = (await r1.json()) as { token: string; accessToken: string };
    expect(r1body.token).toBe(r1body.accessToken);
    const second = refreshCookie(r1);
    expect(second).not.toBe(first.cookie);
    // The rotated cookie is refused and, as reuse, revokes the family: the newest one too.
    const reuse = await post('/auth/refresh', {}, { cookie: first.cookie });
    expect(reuse.status).toBe(401);
    expect(await reuse.json()).toEqual({ error: 'Invalid refresh token' });
    expect((await post('/auth/refresh', {}, { cookie: second })).status).toBe(401);

    const session = await login('bob@halo.local', 'password123');
    const out = await post('/auth/logout', {}, { cookie: session.cookie });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie().join()).toMatch(/refresh_token=;.*Max-Age=0/);
    expect((await post('/auth/refresh', {}, { cookie: session.cookie })).status).toBe(401);
  });

  it('refuses a cross-site refresh with 403', async () => {
    const { cookie } = await login('alice@halo.local', 'password123');
    const res = await post('/auth/refresh', {}, { cookie, 'sec-fetch-site': 'cross-site' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'Forbidden' });
  });

  it('registers a new account that can then log in; a duplicate email is 409', async () => {
    const res = await post('/auth/register', { name: 'Dewi', email: 'dewi@example.com', password: 'long-enough' });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ user: { id: expect.any(Number), name: 'Dewi', email: 'dewi@example.com' } });
    expect((await post('/auth/register', { name: 'D', email: 'DEWI@example.com', password: 'long-enough' })).status).toBe(409);
    await login('dewi@example.com', 'long-enough');
  });
});

describe('roles and API keys', () => {
  it('401 vs 403: a user may not manage API keys, an admin may; a key works as X-API-Key until revoked', async () => {
    const user = await login('alice@halo.local', 'password123');
    const forbidden = await post('/auth/api-keys', { name: 'x', scopes: ['profile:read'] }, { authorization: `Bearer ${user.token}` });
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toEqual({ error: 'Forbidden' });

    const admin = await login('admin@halo.local', 'admin-password');
    const created = await post(
      '/auth/api-keys',
      { name: 'reporting', scopes: ['profile:read'] },
      { authorization: `Bearer ${admin.token}` },
    );
    expect(created.status).toBe(201);
    const { data } = (await created.json()) as { data: { id: number; key: string; prefix: string } };
    expect(data.key.startsWith(data.prefix)).toBe(true);

    const viaKey = await fetch(`${url}/profile`, { headers: { 'x-api-key': data.key } });
    expect(viaKey.status).toBe(200);
    expect(((await viaKey.json()) as { email: string }).email).toBe('admin@halo.local');

    // The key's scopes bound it: profile:read does not allow creating users.
    const scoped = await gql(url, 'mutation { createUser(name: "K", email: "k@example.com") { id } }', undefined, {
      'x-api-key': data.key,
    });
    expect(scoped.body.errors?.[0].extensions.code).toBe('FORBIDDEN');

    const revoked = await fetch(`${url}/auth/api-keys/${data.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${admin.token}` },
    });
    expect(revoked.status).toBe(204);
    const after = await fetch(`${url}/profile`, { headers: { 'x-api-key': data.key } });
    expect(after.status).toBe(401);
    expect(await after.json()).toEqual({ error: 'Invalid API key' });
  });
});

describe('GraphQL with tokens', () => {
  it('me: 401 without a token, the caller with one', async () => {
    const anonymous = await gql(url, '{ me { id name email } }');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors?.[0].extensions.code).toBe('UNAUTHENTICATED');
    const { token, user } = await login('bob@halo.local', 'password123');
    const me = await gql(url, '{ me { id name email } }', undefined, { authorization: `Bearer ${token}` });
    expect(me.body).toEqual({ data: { me: { id: String(user.id), name: 'Bob', email: 'bob@halo.local' } } });
  });
});

describe('brute force', () => {
  it('after 5 failed logins for one email → 429 Too many attempts with Retry-After, even with the right password', async () => {
    await post('/auth/register', { name: 'Eko', email: 'eko@example.com', password: 'correct-horse' });
    for (let i = 0; i < 5; i++) expect((await post('/auth/login', { email: 'eko@example.com', password: `wrong-${i}` })).status).toBe(401);
    const blocked = await post('/auth/login', { email: 'eko@example.com', password: 'correct-horse' });
    expect(blocked.status).toBe(429);
    expect(await blocked.json()).toEqual({ error: 'Too many attempts' });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
