import { capturingLogger } from '@halo/kit/testing';
import { cookie, decodeJwt, http, login, post, refreshCookieOf, signUp, startTestSystem, type TestSystem } from './helpers';
import { viaGateway } from './login-limits';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem();
});

afterAll(async () => {
  await sys?.close();
});

const refresh = (token: string, headers: Record<string, string> = {}) =>
  post(sys.base, '/auth/refresh', undefined, { ...cookie(token), ...headers });

describe('POST /auth/refresh', () => {
  it('200 {token, accessToken} and a NEW refresh cookie; the old token then fails', async () => {
    const me = await signUp(sys.base, { name: 'Rolf' });
    const res = await refresh(me.refreshToken);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ token: expect.any(String), accessToken: expect.any(String) });
    expect(res.body.token).toBe(res.body.accessToken);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(decodeJwt(res.body.token).payload).toMatchObject({ sub: String(me.user.id), name: 'Rolf', role: 'user' });

    const next = refreshCookieOf(res)!;
    expect(next).toMatch(/^[0-9a-f-]{36}$/);
    expect(next).not.toBe(me.refreshToken);
    expect(res.headers.get('set-cookie')).toMatch(
      new RegExp(`^refresh_token=${next}; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=\\d+$`),
    );
    // The new token works once, with the family's original expiry (absolute lifetime).
    const maxAge = Number(/Max-Age=(\d+)/.exec(res.headers.get('set-cookie')!)![1]);
    expect(maxAge).toBeLessThanOrEqual(2_592_000);
    expect(maxAge).toBeGreaterThan(2_592_000 - 60);
    const { rows } = await sys.authDb.query<{ n: number }>(
      'SELECT count(DISTINCT expires_at) AS n FROM refresh_tokens WHERE user_id = $1',
      [me.user.id],
    );
    expect(rows[0]!.n).toBe(1);
    expect((await refresh(next)).status).toBe(200);
  });

  it('presenting a rotated token again revokes the whole family: the newest token fails too', async () => {
    const me = await signUp(sys.base);
    const first = me.refreshToken;
    const second = refreshCookieOf(await refresh(first))!;
    const third = refreshCookieOf(await refresh(second))!;

    const reuse = await refresh(first);
    expect([reuse.status, reuse.body]).toEqual([401, { error: 'Invalid refresh token' }]);
    expect(reuse.headers.get('set-cookie')).toBeNull();
    const newest = await refresh(third);
    expect([newest.status, newest.body]).toEqual([401, { error: 'Invalid refresh token' }]);

    // Another session of the same user (another family) is not affected.
    const other = await login(sys.base, me.email, me.password);
    expect((await refresh(other.refreshToken!)).status).toBe(200);
  });

  it('two concurrent refreshes with one token: at most one wins, and the family ends revoked', async () => {
    const me = await signUp(sys.base);
    const results = await Promise.all([refresh(me.refreshToken), refresh(me.refreshToken)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    const winner = results.find((r) => r.status === 200)!;
    expect((await refresh(refreshCookieOf(winner)!)).status).toBe(401);
  });

  it('an expired refresh token → 401', async () => {
    const me = await signUp(sys.base);
    await sys.authDb.query(`UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [me.user.id]);
    const res = await refresh(me.refreshToken);
    expect([res.status, res.body]).toEqual([401, { error: 'Invalid refresh token' }]);
  });

  it.each([
    ['no cookie', {}],
    ['an unknown token', cookie('0b6d3c2e-2f4c-4f6e-9a51-5d4a3c2b1a09')],
    ['a malformed token', cookie('not-a-uuid')],
    ['another cookie only', { cookie: 'theme=dark' }],
  ])('%s → 401 Invalid refresh token', async (_, headers) => {
    const res = await post(sys.base, '/auth/refresh', undefined, headers);
    expect([res.status, res.body]).toEqual([401, { error: 'Invalid refresh token' }]);
  });

  it('finds the cookie among others', async () => {
    const me = await signUp(sys.base);
    const res = await post(sys.base, '/auth/refresh', undefined, { cookie: `a=1; refresh_token=${me.refreshToken}; b=2` });
    expect(res.status).toBe(200);
  });

  it.each([
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['a foreign Origin', { origin: 'https://evil.example' }],
    ['Origin: null', { origin: 'null' }],
    [
      'an Origin matched by X-Forwarded-Host/-Proto that the gateway did not vouch for',
      { origin: 'https://halo.example', 'x-forwarded-host': 'halo.example', 'x-forwarded-proto': 'https' },
    ],
  ])('%s → 403 Forbidden, and the token is left alone', async (_, headers) => {
    const me = await signUp(sys.base);
    const res = await refresh(me.refreshToken, headers);
    expect([res.status, res.body]).toEqual([403, { error: 'Forbidden' }]);
    expect((await refresh(me.refreshToken)).status).toBe(200);
  });

  it.each([
    ['same-origin fetch metadata', () => ({ 'sec-fetch-site': 'same-origin' })],
    ['its own Origin', () => ({ origin: sys.base })],
    [
      'the Origin the client addressed (X-Forwarded-Host/-Proto as the gateway sets them)',
      () => ({
        origin: 'https://halo.example',
        ...viaGateway({ 'x-forwarded-host': 'halo.example', 'x-forwarded-proto': 'https' }),
      }),
    ],
  ])('%s is fine', async (_, headers) => {
    const me = await signUp(sys.base);
    expect((await refresh(me.refreshToken, headers())).status).toBe(200);
  });

  it('an Origin listed in ALLOWED_ORIGINS (the former name of CORS_ORIGINS) is fine', async () => {
    const other = await sys.startAuth({ ALLOWED_ORIGINS: 'https://app.example.com, http://localhost:5173' });
    const me = await signUp(other.base);
    const ok = await post(other.base, '/auth/refresh', undefined, { ...cookie(me.refreshToken), origin: 'https://app.example.com' });
    expect(ok.status).toBe(200);
    const no = await post(other.base, '/auth/refresh', undefined, { ...cookie(refreshCookieOf(ok)!), origin: 'https://evil.example' });
    expect(no.status).toBe(403);
  });

  it('CORS_ORIGINS patterns: a listed pattern origin refreshes, an unlisted one is refused on refresh, login and logout', async () => {
    const other = await sys.startAuth({ CORS_ORIGINS: 'http://localhost:*, https://*.halo.example' });
    const me = await signUp(other.base);
    const viaPort = await post(other.base, '/auth/refresh', undefined, { ...cookie(me.refreshToken), origin: 'http://localhost:5173' });
    expect(viaPort.status).toBe(200);
    const token = refreshCookieOf(viaPort)!;
    for (const origin of ['https://halo.example.evil.net', 'http://127.0.0.1:5173', 'https://halo.example']) {
      const refused = await post(other.base, '/auth/refresh', undefined, { ...cookie(token), origin });
      expect([origin, refused.status, refused.body]).toEqual([origin, 403, { error: 'Forbidden' }]);
      const login = await post(other.base, '/auth/login', { email: me.email, password: me.password }, { origin });
      expect([origin, login.status]).toEqual([origin, 403]);
      expect((await post(other.base, '/auth/logout', undefined, { ...cookie(token), origin })).status).toBe(403);
    }
    // Refused requests left the token alone.
    expect((await post(other.base, '/auth/refresh', undefined, cookie(token))).status).toBe(200);
  });

  it('the same-site deployment: app.halo.example (listed) refreshes through api.halo.example with the cookie', async () => {
    const other = await sys.startAuth({ CORS_ORIGINS: 'https://app.halo.example' });
    const me = await signUp(other.base);
    // What a browser sends from https://app.halo.example to https://api.halo.example (through the
    // gateway): SameSite=Strict still attaches the cookie, as the two are one site.
    const sameSite = {
      origin: 'https://app.halo.example',
      'sec-fetch-site': 'same-site',
      ...viaGateway({ 'x-forwarded-host': 'api.halo.example', 'x-forwarded-proto': 'https' }),
    };
    const res = await post(other.base, '/auth/refresh', undefined, { ...cookie(me.refreshToken), ...sameSite });
    expect(res.status).toBe(200);
    expect(refreshCookieOf(res)).toBeTruthy();
    // The same request from another site is refused, whatever its Origin claims.
    const crossSite = { ...sameSite, 'sec-fetch-site': 'cross-site' };
    expect((await post(other.base, '/auth/refresh', undefined, { ...cookie(refreshCookieOf(res)!), ...crossSite })).status).toBe(403);
  });
});

describe('POST /auth/logout', () => {
  it('204, clears the cookie, and the refresh token no longer works', async () => {
    const me = await signUp(sys.base);
    const res = await post(sys.base, '/auth/logout', undefined, cookie(me.refreshToken));
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers.get('set-cookie')).toBe('refresh_token=; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=0');
    expect((await refresh(me.refreshToken)).status).toBe(401);
    const { rows } = await sys.authDb.query('SELECT 1 FROM refresh_tokens WHERE user_id = $1', [me.user.id]);
    expect(rows).toEqual([]);
  });

  it('ends the whole session: an earlier (rotated) token of it is unknown afterwards', async () => {
    const me = await signUp(sys.base);
    const second = refreshCookieOf(await refresh(me.refreshToken))!;
    expect((await post(sys.base, '/auth/logout', undefined, cookie(second))).status).toBe(204);
    expect((await refresh(me.refreshToken)).status).toBe(401);
    expect((await refresh(second)).status).toBe(401);
  });

  it('without a cookie: still 204 and the cookie is cleared', async () => {
    const res = await post(sys.base, '/auth/logout');
    expect(res.status).toBe(204);
    expect(res.headers.get('set-cookie')).toContain('Max-Age=0');
  });

  it('cross-site → 403 and the session survives', async () => {
    const me = await signUp(sys.base);
    const crossSite: Record<string, string>[] = [{ 'sec-fetch-site': 'cross-site' }, { origin: 'https://evil.example' }];
    for (const headers of crossSite) {
      const res = await post(sys.base, '/auth/logout', undefined, { ...cookie(me.refreshToken), ...headers });
      expect([res.status, res.body]).toEqual([403, { error: 'Forbidden' }]);
    }
    expect((await refresh(me.refreshToken)).status).toBe(200);
  });

  it('GET is 405', async () => {
    expect((await http(sys.base, 'GET', '/auth/logout')).status).toBe(405);
  });
});

describe('login from another site', () => {
  it('is refused like refresh (a cookie-setting route)', async () => {
    const me = await signUp(sys.base);
    const res = await login(sys.base, me.email, me.password, { 'sec-fetch-site': 'cross-site' });
    expect([res.status, res.body]).toEqual([403, { error: 'Forbidden' }]);
  });
});

describe('COOKIE_SECURE=false (embedded dev mode over plain http)', () => {
  it('omits Secure and keeps everything else', async () => {
    const dev = await sys.startAuth({ COOKIE_SECURE: 'false' });
    const me = await signUp(dev.base);
    const res = await login(dev.base, me.email, me.password);
    expect(res.headers.get('set-cookie')).toBe(`refresh_token=${res.refreshToken}; HttpOnly; SameSite=Strict; Path=/auth; Max-Age=2592000`);
  });
});

describe('logs', () => {
  it('the reuse warning carries the id of the request that presented the old token (request context, no parameter)', async () => {
    const { logger, lines } = capturingLogger('warn', 'auth');
    const own = await startTestSystem({}, {}, logger);
    try {
      const me = await signUp(own.base);
      expect((await post(own.base, '/auth/refresh', undefined, cookie(me.refreshToken))).status).toBe(200);
      const reuse = await post(own.base, '/auth/refresh', undefined, { ...cookie(me.refreshToken), 'x-request-id': 'reuse-trace-1' });
      expect(reuse.status).toBe(401);
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 40, msg: 'refresh token reused; family revoked', requestId: 'reuse-trace-1', userId: me.user.id }),
      );
    } finally {
      await own.close();
    }
  });
});
