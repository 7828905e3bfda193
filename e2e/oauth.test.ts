import { readdirSync, readFileSync } from 'node:fs';
import { TestBrowser } from '@halo/kit/testing';
import { startE2ESystem } from './helpers';

/**
 * Third-party login through the gateway, as `npm start` wires it: the launcher runs the dev
 * OpenID provider (started on its first use) and registers it with auth as provider `dev`; a
 * "browser" clicks through.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;

beforeAll(async () => {
  sys = await startE2ESystem({ devOidc: true });
  url = sys.url;
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

/** The pids of this test's processes (the launcher runs in it) that run the dev OpenID provider. */
function devProviderPids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === process.pid && /dev-oidc(\.bundle)?\.js/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
      } catch {
        return false; // ended while we looked
      }
    })
    .map(Number);
}

// First in this file: nothing may have used the provider yet.
it('runs no provider process until the first sign-in, which starts it and answers 302 to the provider', async () => {
  expect(devProviderPids()).toEqual([]);
  expect(sys.system.processes.map((p) => p.name)).not.toContain('oidc');
  expect(sys.system.devOidcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

  const start = await new TestBrowser().request(`${url}/auth/oauth/dev/start`);
  expect(start.status).toBe(302);
  const location = new URL(start.headers.get('location')!);
  expect(location.origin).toBe(sys.system.devOidcUrl);
  expect(devProviderPids()).toHaveLength(1);
  expect(sys.system.processes.filter((p) => p.name === 'oidc')).toHaveLength(1);
  const discovery = await fetch(`${sys.system.devOidcUrl}/.well-known/openid-configuration`);
  expect(((await discovery.json()) as { issuer: string }).issuer).toBe(sys.system.devOidcUrl);
});

/** /start at the gateway → the provider's login form → "Sign in" as `email` → back at the callback. */
async function loginWithProvider(browser: TestBrowser, email: string): Promise<Response> {
  const start = await browser.request(`${url}/auth/oauth/dev/start`);
  expect(start.status).toBe(302);
  const authUrl = new URL(start.headers.get('location')!);
  expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authUrl.searchParams.get('scope')).toBe('openid email profile');
  const form = await browser.follow(authUrl.href, authUrl.origin);
  expect(form.res.status).toBe(200);
  const action = /action="([^"]+\/login)"/.exec(await form.res.text())![1]!;
  const posted = await browser.request(new URL(action, form.url).href, { email });
  const back = await browser.follow(new URL(posted.headers.get('location')!, form.url).href, authUrl.origin);
  expect(back.url.startsWith(`${url}/auth/oauth/dev/callback?`)).toBe(true);
  return browser.request(back.url);
}

it('logs an existing user in through the dev provider, answering like /auth/login', async () => {
  const res = await loginWithProvider(new TestBrowser(), 'alice@halo.local');
  expect(res.status).toBe(200);
  const body = (await res.json()) as { token: string; accessToken: string; user: { id: number; name: string } };
  expect(body.token).toBe(body.accessToken);
  expect(body.user.name).toBe('Alice');
  expect(res.headers.getSetCookie().some((c) => c.startsWith('refresh_token='))).toBe(true);
  const profile = await fetch(`${url}/profile`, { headers: { authorization: `Bearer ${body.token}` } });
  expect(((await profile.json()) as { email: string }).email).toBe('alice@halo.local');
});

it('creates the local user on first login with a new verified email', async () => {
  const res = await loginWithProvider(new TestBrowser(), 'carol@example.com');
  expect(res.status).toBe(200);
  const { token } = (await res.json()) as { token: string };
  const profile = await fetch(`${url}/profile`, { headers: { authorization: `Bearer ${token}` } });
  expect(await profile.json()).toMatchObject({ email: 'carol@example.com', role: 'user' });
});

it('refuses a callback whose state does not match the browser’s → 400 Invalid state', async () => {
  const browser = new TestBrowser();
  const start = await browser.request(`${url}/auth/oauth/dev/start`);
  const state = new URL(start.headers.get('location')!).searchParams.get('state');
  const forged = await browser.request(`${url}/auth/oauth/dev/callback?code=whatever&state=${state}x`);
  expect(forged.status).toBe(400);
  expect(await forged.json()).toEqual({ error: 'Invalid state' });
});
