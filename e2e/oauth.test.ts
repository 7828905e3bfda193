import { TestBrowser } from '@halo/kit/testing';
import { startE2ESystem } from './helpers';

/**
 * Third-party login through the gateway, as `npm start` wires it: the launcher runs the dev
 * OpenID provider and registers it with auth as provider `dev`; a "browser" clicks through.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;

beforeAll(async () => {
  sys = await startE2ESystem({ portOffset: 600, devOidc: true });
  url = sys.url;
}, 90_000);

afterAll(async () => {
  await sys?.stop();
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
