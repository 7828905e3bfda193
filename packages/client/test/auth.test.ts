import { createHaloClient, HaloApiError, MemoryCookieJar, SignedOutError } from '../src';
import { json, recordingSleep, startServer, type TestServer } from './servers';

/**
 * Token renewal against a real local server that behaves like auth behind the gateway
 * (docs/api/auth.md): login sets a Secure, HttpOnly refresh cookie with Path=/auth; refresh
 * rotates it and revokes the whole session when a rotated cookie comes back; protected routes
 * answer 401 `Invalid token` to a token it no longer accepts.
 */
class FakeAuth {
  refreshCalls = 0;
  /** Access tokens currently accepted. */
  valid = new Set<string>();
  /** Refresh tokens: live ones, and the rotated ones (presenting one revokes everything). */
  liveRefresh = new Set<string>();
  rotated = new Set<string>();
  refreshAnswer: 'ok' | 'refuse' | 'fail' = 'ok';
  refreshDelayMs = 0;
  /** Resolves once the first refresh has been answered. */
  private markRefreshed: () => void = () => undefined;
  readonly refreshed = new Promise<void>((r) => (this.markRefreshed = r));
  private n = 0;
  server!: TestServer;

  issueAccess(): string {
    const t = `access-${++this.n}`;
    this.valid.add(t);
    return t;
  }

  private issueRefresh(): string {
    const t = `refresh-${++this.n}`;
    this.liveRefresh.add(t);
    return t;
  }

  private cookie(value: string, maxAge = 2592000): string {
    return `refresh_token=${value}; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=${maxAge}`;
  }

  async start(): Promise<this> {
    this.server = await startServer(async (req, res) => {
      const cookie = /refresh_token=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
      const bearer = req.headers.authorization?.replace(/^Bearer /, '');
      if (req.url === '/auth/login') {
        return json(
          res,
          200,
          { token: 'x', accessToken: this.issueAccess(), user: { id: 2, name: 'Alice' } },
          { 'set-cookie': this.cookie(this.issueRefresh()) },
        );
      }
      if (req.url === '/auth/refresh') {
        this.refreshCalls++;
        if (this.refreshDelayMs) await new Promise((r) => setTimeout(r, this.refreshDelayMs));
        try {
          if (this.refreshAnswer === 'fail') return json(res, 503, { error: 'Service unavailable' });
          if (cookie && this.rotated.has(cookie)) {
            this.liveRefresh.clear(); // reuse detection: the whole family goes
            return json(res, 401, { error: 'Invalid refresh token' });
          }
          if (this.refreshAnswer === 'refuse' || !cookie || !this.liveRefresh.has(cookie))
            return json(res, 401, { error: 'Invalid refresh token' });
          this.liveRefresh.delete(cookie);
          this.rotated.add(cookie);
          const token = this.issueAccess();
          return json(res, 200, { token, accessToken: token }, { 'set-cookie': this.cookie(this.issueRefresh()) });
        } finally {
          setTimeout(() => this.markRefreshed(), 0);
        }
      }
      if (req.url === '/auth/logout') {
        if (cookie) this.liveRefresh.delete(cookie);
        res.writeHead(204, { 'set-cookie': this.cookie('', 0) });
        return void res.end();
      }
      if (req.url?.startsWith('/profile')) {
        if (!bearer) return json(res, 401, { error: 'Token required' });
        if (!this.valid.has(bearer)) {
          // Some 401s arrive only after the refresh was answered: a stale 401 must not refresh again.
          if (req.url === '/profile?late=1') await this.refreshed;
          return json(res, 401, { error: 'Invalid token' });
        }
        return json(res, 200, {
          id: 2,
          name: 'Alice',
          email: 'alice@halo.local',
          avatar: null,
          role: 'user',
          created_at: 'x',
          token: bearer,
        });
      }
      return json(res, 404, { error: 'Not found' });
    });
    return this;
  }
}

let auth: FakeAuth;
beforeEach(async () => {
  auth = await new FakeAuth().start();
});
afterEach(() => auth.server.close());

function client(extra: Parameters<typeof createHaloClient>[0] = {}) {
  return createHaloClient({ baseUrl: auth.server.url, sleep: recordingSleep().sleep, ...extra });
}

describe('login and the cookie jar', () => {
  it('keeps the token from login and the refresh cookie in the jar; sends the cookie only to /auth/*', async () => {
    const jar = new MemoryCookieJar();
    const halo = client({ cookieJar: jar });
    const login = await halo.auth.login({ email: 'alice@halo.local', password: 'password123' });
    expect(halo.accessToken).toBe(login.accessToken);
    expect(jar.header(`${auth.server.url}/auth/refresh`)).toMatch(/^refresh_token=refresh-\d+$/);
    await halo.auth.profile();
    const profileReq = auth.server.seen.find((s) => s.url === '/profile')!;
    expect(profileReq.headers.authorization).toBe(`Bearer ${login.accessToken}`);
    expect(profileReq.headers.cookie).toBeUndefined();
    expect(auth.server.seen.find((s) => s.url === '/auth/login')!.headers.authorization).toBeUndefined();
  });

  it('refresh sends the cookie, stores the rotated one, and the old one is never sent again', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    const first = halo.cookieJar!.header(`${auth.server.url}/auth/refresh`);
    const token = await halo.auth.refresh();
    expect(halo.accessToken).toBe(token);
    const second = halo.cookieJar!.header(`${auth.server.url}/auth/refresh`);
    expect(second).not.toEqual(first);
    await halo.auth.refresh();
    const cookiesSent = auth.server.seen.filter((s) => s.url === '/auth/refresh').map((s) => s.headers.cookie);
    expect(cookiesSent).toEqual([first, second]);
    expect(auth.refreshCalls).toBe(2);
  });

  it('logout forgets the token and the server clears the cookie', async () => {
    const changes: (string | null)[] = [];
    const halo = client({ onTokenChange: (t) => changes.push(t) });
    await halo.auth.login({ email: 'a', password: 'b' });
    await halo.auth.logout();
    expect(halo.accessToken).toBeNull();
    expect(halo.cookieJar!.header(`${auth.server.url}/auth/refresh`)).toBeNull();
    expect(changes).toEqual([expect.stringMatching(/^access-/), null]);
  });
});

describe('renewal after a 401', () => {
  it('renews once and resends the request with the new token', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    auth.valid.clear(); // the access token expired
    const profile = (await halo.auth.profile()) as unknown as { token: string };
    expect(auth.refreshCalls).toBe(1);
    expect(profile.token).toBe(halo.accessToken);
    expect(auth.server.seen.filter((s) => s.url === '/profile')).toHaveLength(2);
  });

  it('10 concurrent 401s share ONE refresh (single flight), and all succeed with the new token', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    auth.valid.clear();
    auth.refreshDelayMs = 100;
    const results = await Promise.all(Array.from({ length: 10 }, () => halo.auth.profile()));
    expect(auth.refreshCalls).toBe(1);
    const tokens = new Set(results.map((p) => (p as unknown as { token: string }).token));
    expect([...tokens]).toEqual([halo.accessToken]);
    expect(auth.server.seen.filter((s) => s.url === '/profile')).toHaveLength(20);
  });

  it('a 401 that arrives after the refresh finished does not refresh again', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    auth.valid.clear();
    // Half of them are refused only once the refresh has been answered.
    const calls = Array.from({ length: 10 }, (_, i) => halo.request({ method: 'GET', path: '/profile', query: i % 2 ? { late: 1 } : {} }));
    const results = await Promise.all(calls);
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(auth.refreshCalls).toBe(1);
  });

  it('a refused refresh surfaces SignedOutError to every waiting call, once, and clears the token', async () => {
    const changes: (string | null)[] = [];
    const halo = client({ onTokenChange: (t) => changes.push(t) });
    await halo.auth.login({ email: 'a', password: 'b' });
    auth.valid.clear();
    auth.refreshAnswer = 'refuse';
    auth.refreshDelayMs = 50;
    const settled = await Promise.allSettled(Array.from({ length: 10 }, () => halo.auth.profile()));
    expect(settled.every((s) => s.status === 'rejected' && s.reason instanceof SignedOutError)).toBe(true);
    const err = (settled[0] as PromiseRejectedResult).reason as SignedOutError;
    expect(err.cause).toBeInstanceOf(HaloApiError);
    expect(err.cause).toMatchObject({ status: 401, message: 'Invalid refresh token' });
    expect(auth.refreshCalls).toBe(1);
    expect(halo.accessToken).toBeNull();
    expect(changes.at(-1)).toBeNull();
    // Signed out: later calls go without a token and get the server's 401 (no refresh loop).
    await expect(halo.auth.profile()).rejects.toMatchObject({ status: 401, message: 'Token required' });
    expect(auth.refreshCalls).toBe(1);
  });

  it('without a refresh cookie (a Node client with no jar), a 401 ends in SignedOutError', async () => {
    const halo = client({ cookieJar: false, accessToken: 'stale' });
    await expect(halo.auth.profile()).rejects.toBeInstanceOf(SignedOutError);
    expect(auth.server.seen.find((s) => s.url === '/auth/refresh')!.headers.cookie).toBeUndefined();
  });

  it('a refresh that fails for another reason (503) is reported as such and keeps the session', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    const token = halo.accessToken;
    auth.valid.clear();
    auth.refreshAnswer = 'fail';
    await expect(halo.auth.profile()).rejects.toMatchObject({ name: 'HaloApiError', status: 503 });
    expect(halo.accessToken).toBe(token);
    auth.refreshAnswer = 'ok';
    await expect(halo.auth.profile()).resolves.toMatchObject({ name: 'Alice' });
  });

  it('a 401 to a request sent without a token is just an answer (no refresh)', async () => {
    const halo = client();
    await expect(halo.auth.profile()).rejects.toMatchObject({ status: 401, message: 'Token required' });
    expect(auth.refreshCalls).toBe(0);
  });

  it('explicit refresh() calls made together share one request', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    auth.refreshDelayMs = 50;
    const [a, b, c] = await Promise.all([halo.auth.refresh(), halo.auth.refresh(), halo.auth.refresh()]);
    expect(a).toBe(b);
    expect(b).toBe(c);
    expect(auth.refreshCalls).toBe(1);
  });

  it('an abort while waiting for the shared refresh ends that call at once; the refresh still completes for the others', async () => {
    const halo = client();
    await halo.auth.login({ email: 'a', password: 'b' });
    auth.valid.clear();
    auth.refreshDelayMs = 300;
    const ctl = new AbortController();
    const aborted = halo.auth.profile({ signal: ctl.signal });
    const other = halo.auth.profile();
    await new Promise((r) => setTimeout(r, 100));
    ctl.abort();
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    await expect(other).resolves.toMatchObject({ name: 'Alice' });
    expect(auth.refreshCalls).toBe(1);
  });

  it('an API-key client sends X-API-Key and never refreshes', async () => {
    const halo = client({ apiKey: 'halo_k' });
    await expect(halo.auth.profile()).rejects.toMatchObject({ status: 401 });
    expect(auth.server.seen[0]!.headers['x-api-key']).toBe('halo_k');
    expect(auth.refreshCalls).toBe(0);
  });
});
