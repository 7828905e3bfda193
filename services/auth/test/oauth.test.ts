import { createHash, randomBytes } from 'node:crypto';
import { createServer, request as forward, type Server } from 'node:http';
import { resolve } from 'node:path';
import { migrate } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { closeHttpServer, Lifecycle, listen } from '@halo/kit/process';
import { createHttpApp, finishHttpApp } from '@halo/kit/service';
import { freePort, openTestDb, type TestDb, TestBrowser } from '@halo/kit/testing';
import { startDevOidcProvider, type DevOidcProvider } from '../../../tools/src/dev-oidc';
import { AuthStore } from '../src/db/store';
import type { OAuthIdentity } from '../src/domain/identities';
import { oauthRoutes } from '../src/rest/oauth-routes';
import { OAuthFlows } from '../src/domain/oauth';
import { loadOAuthProviders, type OAuthProviders } from '../src/adapters/oidc/providers';

/**
 * The OAuth/OIDC login end to end, non-interactively, against REAL dev OpenID providers:
 * - `dev`: the provider as is;
 * - `tampered`: another provider reached through a proxy that flips one character of the
 *   id_token's signature in token responses (the provider stays real, its issuer is the proxy);
 * - `late`: a provider that is not running at first (discovery fails, then succeeds on retry).
 */

const CLIENT_ID = 'halo-test';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const logger = createLogger('auth-oauth-test', 'silent');

let db: TestDb;
let store: AuthStore;
let providers: OAuthProviders;
let appServer: Server;
let appBase: string;
let dev: DevOidcProvider;
let tampered: DevOidcProvider;
let proxy: Server;
let latePort: number;
let late: DevOidcProvider | undefined;
const logins: OAuthIdentity[] = [];
let tamperedResponses = 0;
let nextUserId = 1000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const callbackOf = (provider: string) => `${appBase}/auth/oauth/${provider}/callback`;
const providerOptions = (redirect: string) => ({
  host: '127.0.0.1',
  port: 0,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  redirectUris: [redirect],
});

beforeAll(async () => {
  db = await openTestDb('auth_oauth');
  await migrate(db, resolve(__dirname, '../migrations'));
  store = new AuthStore(db);

  // The redirect URIs must be registered before the providers start: listen first, wire the app after.
  appServer = createServer();
  appBase = `http://127.0.0.1:${await listen(appServer, 0, '127.0.0.1')}`;

  dev = await startDevOidcProvider(providerOptions(callbackOf('dev')));

  let target = 0;
  proxy = tamperingProxy(() => target);
  const proxyPort = await listen(proxy, 0, '127.0.0.1');
  tampered = await startDevOidcProvider({ ...providerOptions(callbackOf('tampered')), issuer: `http://127.0.0.1:${proxyPort}` });
  target = tampered.port;

  // A free port with nothing on it yet: the `late` provider starts there during a test.
  latePort = await freePort();

  const vars: Record<string, string> = { OAUTH_PROVIDERS: 'dev,tampered,late' };
  const issuers = { dev: dev.issuer, tampered: tampered.issuer, late: `http://127.0.0.1:${latePort}` };
  for (const [name, issuer] of Object.entries(issuers)) {
    const prefix = `OAUTH_${name.toUpperCase()}_`;
    Object.assign(vars, {
      [`${prefix}ISSUER`]: issuer,
      [`${prefix}CLIENT_ID`]: CLIENT_ID,
      [`${prefix}CLIENT_SECRET`]: CLIENT_SECRET,
      [`${prefix}REDIRECT_URI`]: callbackOf(name),
    });
  }
  providers = loadOAuthProviders(vars, { logger });
  const flows = new OAuthFlows({ store, providers });
  const lifecycle = new Lifecycle(logger);
  const app = createHttpApp({ logger, lifecycle, ready: async () => undefined, bodyLimit: 1 << 20 });
  app.use(
    oauthRoutes({
      flows,
      cookieSecure: false,
      // What the auth service does, minus the user table: link (or reuse) a user id, answer 200.
      async onLogin(identity, _req, res) {
        logins.push(identity);
        const userId = (await store.userIdForIdentity(identity.provider, identity.subject)) ?? nextUserId++;
        await store.linkIdentity(identity, userId);
        res.status(200).json({ userId, identity });
      },
    }),
  );
  finishHttpApp(app);
  appServer.on('request', app);
});

afterAll(async () => {
  await Promise.all([appServer, proxy].map((s) => s && closeHttpServer(s, 1_000)));
  await Promise.all([dev, tampered, late].map((p) => Promise.resolve(p?.close())));
  await db?.drop();
});

/** A reverse proxy that passes everything through, except that it breaks id_token signatures. */
function tamperingProxy(target: () => number): Server {
  return createServer((req, res) => {
    const upstream = forward({ host: '127.0.0.1', port: target(), method: req.method, path: req.url, headers: req.headers }, (up) => {
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/token') {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        let body = Buffer.concat(chunks).toString('utf8');
        if (up.statusCode === 200) {
          const json = JSON.parse(body) as { id_token: string };
          const [header, payload, signature = ''] = json.id_token.split('.');
          // A character in the middle: every bit of it is part of the signature.
          const i = Math.floor(signature.length / 2);
          const flipped = signature.slice(0, i) + (signature[i] === 'A' ? 'B' : 'A') + signature.slice(i + 1);
          json.id_token = [header, payload, flipped].join('.');
          body = JSON.stringify(json);
          tamperedResponses++;
        }
        res.writeHead(up.statusCode ?? 502, { ...up.headers, 'content-length': String(Buffer.byteLength(body)) });
        res.end(body);
      });
    });
    upstream.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(upstream);
  });
}

interface Started {
  browser: TestBrowser;
  authUrl: URL;
  state: string;
  res: Response;
}

async function start(provider = 'dev', browser = new TestBrowser()): Promise<Started> {
  const res = await browser.request(`${appBase}/auth/oauth/${provider}/start`);
  expect(res.status).toBe(302);
  const authUrl = new URL(res.headers.get('location')!);
  return { browser, authUrl, state: authUrl.searchParams.get('state')!, res };
}

/** At the provider: the login form, then "Sign in" (or "Cancel"); returns the callback URL it sends back to. */
async function atProvider(
  s: Pick<Started, 'browser' | 'authUrl'>,
  email = 'alice@halo.local',
  button: 'login' | 'abort' = 'login',
): Promise<string> {
  const form = await s.browser.follow(s.authUrl.href, s.authUrl.origin);
  expect(form.res.status).toBe(200);
  const action = new RegExp(`action="([^"]+/${button})"`).exec(await form.res.text())![1]!;
  const posted = await s.browser.request(new URL(action, form.url).href, button === 'login' ? { email } : {});
  expect(posted.status).toBe(303);
  const back = await s.browser.follow(new URL(posted.headers.get('location')!, form.url).href, s.authUrl.origin);
  expect(back.url.startsWith(`${appBase}/auth/oauth/`)).toBe(true);
  return back.url;
}

/** start → provider → back at the callback URL (not yet requested). */
async function throughProvider(provider = 'dev', email = 'alice@halo.local') {
  const s = await start(provider);
  return { ...s, callbackUrl: await atProvider(s, email) };
}

const callback = (url: string, cookie?: string) => fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
const errorOf = async (res: Response) => ((await res.json()) as { error: string }).error;

describe('OAuth login against the dev OpenID provider', () => {
  it('redirects to the provider with client_id, redirect_uri, scope, state, nonce and PKCE S256, and sets the state cookie', async () => {
    const { authUrl, state, res } = await start();
    expect(authUrl.origin + authUrl.pathname).toBe(`${dev.issuer}/auth`);
    const p = Object.fromEntries(authUrl.searchParams);
    expect(p).toMatchObject({
      client_id: CLIENT_ID,
      redirect_uri: callbackOf('dev'),
      response_type: 'code',
      scope: 'openid email profile',
      code_challenge_method: 'S256',
    });
    expect(p.state).toMatch(/^[\w-]{32,}$/);
    expect(p.nonce).toMatch(/^[\w-]{32,}$/);
    expect(p.code_challenge).toMatch(/^[\w-]{43}$/);
    expect(res.headers.get('cache-control')).toBe('no-store');

    const [cookie, ...others] = res.headers.getSetCookie();
    expect(others).toEqual([]);
    expect(cookie).toBe(`oauth_state=${state}; HttpOnly; SameSite=Lax; Path=/auth/oauth; Max-Age=600`);

    // Server-side: only the hash of the state, with the verifier and nonce, expiring in 10 minutes.
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT provider, nonce, code_verifier, round(extract(epoch FROM expires_at - created_at)) AS ttl
         FROM oauth_flows WHERE state_hash = $1`,
      [sha256(state)],
    );
    expect(rows).toEqual([{ provider: 'dev', nonce: p.nonce, code_verifier: expect.stringMatching(/^[\w-]{43,128}$/), ttl: 600 }]);
    expect(
      createHash('sha256')
        .update(rows[0]!.code_verifier as string)
        .digest('base64url'),
    ).toBe(p.code_challenge);
  });

  it('completes the code flow: onLogin receives the verified identity, and the state cookie is cleared', async () => {
    const { browser, state, callbackUrl } = await throughProvider('dev', 'alice@halo.local');
    const u = new URL(callbackUrl);
    expect(u.searchParams.get('state')).toBe(state);
    expect(u.searchParams.get('code')).toBeTruthy();

    const res = await browser.request(callbackUrl);
    expect(res.status).toBe(200);
    const identity = { provider: 'dev', subject: 'alice@halo.local', email: 'alice@halo.local', name: 'Alice' };
    expect(await res.json()).toEqual({ userId: expect.any(Number), identity });
    expect(logins.at(-1)).toEqual(identity);
    expect(res.headers.getSetCookie()).toContain('oauth_state=; HttpOnly; SameSite=Lax; Path=/auth/oauth; Max-Age=0');
    expect(browser.jar.get(appBase)?.has('oauth_state')).toBe(false);
    expect((await db.query('SELECT 1 FROM oauth_flows WHERE state_hash = $1', [sha256(state)])).rowCount).toBe(0);
  });

  it('links the provider account to one local user across logins', async () => {
    const first = await throughProvider('dev', 'bob@halo.local');
    const a = (await (await first.browser.request(first.callbackUrl)).json()) as { userId: number };
    const second = await throughProvider('dev', 'bob@halo.local');
    const b = (await (await second.browser.request(second.callbackUrl)).json()) as { userId: number };
    expect(b.userId).toBe(a.userId);
    expect(await store.userIdForIdentity('dev', 'bob@halo.local')).toBe(a.userId);
    expect(await store.userIdForIdentity('dev', 'nobody@halo.local')).toBeNull();
  });

  it('refuses a callback whose state differs from the cookie', async () => {
    const { callbackUrl } = await throughProvider();
    const res = await callback(callbackUrl, `oauth_state=${randomBytes(32).toString('base64url')}`);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('Invalid state');
  });

  it('refuses a callback without the state cookie', async () => {
    const { callbackUrl } = await throughProvider();
    const res = await callback(callbackUrl);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('Invalid state');
  });

  it('refuses a callback without state, or with a state it never issued', async () => {
    const noState = await callback(`${callbackOf('dev')}?code=abc`, 'oauth_state=abc');
    expect(noState.status).toBe(400);
    expect(await errorOf(noState)).toBe('Invalid state');
    const forged = randomBytes(32).toString('base64url');
    const unknown = await callback(`${callbackOf('dev')}?code=abc&state=${forged}`, `oauth_state=${forged}`);
    expect(unknown.status).toBe(400);
    expect(await errorOf(unknown)).toBe('Invalid state');
  });

  it('refuses a replayed callback (the same state twice)', async () => {
    const { callbackUrl, state } = await throughProvider();
    const cookie = `oauth_state=${state}`;
    expect((await callback(callbackUrl, cookie)).status).toBe(200);
    const replay = await callback(callbackUrl, cookie);
    expect(replay.status).toBe(400);
    expect(await errorOf(replay)).toBe('Invalid state');
  });

  it('refuses an expired flow', async () => {
    const { callbackUrl, state } = await throughProvider();
    await db.query(`UPDATE oauth_flows SET expires_at = now() - interval '1 second' WHERE state_hash = $1`, [sha256(state)]);
    const res = await callback(callbackUrl, `oauth_state=${state}`);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('Invalid state');
  });

  it("refuses one provider's state at another provider's callback", async () => {
    const { callbackUrl, state } = await throughProvider('dev');
    const elsewhere = callbackUrl.replace('/auth/oauth/dev/', '/auth/oauth/tampered/');
    const res = await callback(elsewhere, `oauth_state=${state}`);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('Invalid state');
  });

  it('answers 401 Invalid id_token when the id_token signature does not verify', async () => {
    const before = tamperedResponses;
    const { browser, callbackUrl } = await throughProvider('tampered');
    const res = await browser.request(callbackUrl);
    expect(tamperedResponses).toBe(before + 1);
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('Invalid id_token');
  });

  it('answers 401 Invalid id_token when the id_token carries another nonce', async () => {
    const { browser, callbackUrl, state } = await throughProvider();
    await db.query('UPDATE oauth_flows SET nonce = $2 WHERE state_hash = $1', [sha256(state), randomBytes(32).toString('base64url')]);
    const res = await browser.request(callbackUrl);
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('Invalid id_token');
  });

  it('answers 401 OAuth login failed when the token endpoint rejects the PKCE verifier', async () => {
    const { browser, callbackUrl, state } = await throughProvider();
    await db.query('UPDATE oauth_flows SET code_verifier = $2 WHERE state_hash = $1', [
      sha256(state),
      randomBytes(32).toString('base64url'),
    ]);
    const res = await browser.request(callbackUrl);
    expect(res.status).toBe(401);
    expect(await errorOf(res)).toBe('OAuth login failed');
  });

  it('answers 400 when the user cancels at the provider (error=access_denied)', async () => {
    const s = await start();
    const callbackUrl = await atProvider(s, undefined, 'abort');
    expect(new URL(callbackUrl).searchParams.get('error')).toBe('access_denied');
    const res = await s.browser.request(callbackUrl);
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toBe('OAuth provider returned an error: access_denied');
    // The flow is used up all the same.
    expect((await s.browser.request(callbackUrl)).status).toBe(400);
  });

  it('answers 404 for an unknown provider and 405 for a wrong method', async () => {
    for (const path of ['/auth/oauth/nope/start', '/auth/oauth/nope/callback?code=a&state=b']) {
      const res = await fetch(`${appBase}${path}`, { redirect: 'manual' });
      expect(res.status).toBe(404);
      expect(await errorOf(res)).toBe('Not found');
    }
    const res = await fetch(`${appBase}/auth/oauth/dev/start`, { method: 'POST' });
    expect(res.status).toBe(405);
  });

  it('answers 503 while the provider is down, discovers it once up, and again after a restart with new keys', async () => {
    const down = await fetch(`${appBase}/auth/oauth/late/start`, { redirect: 'manual' });
    expect(down.status).toBe(503);
    expect(await errorOf(down)).toBe('OAuth provider unavailable');

    late = await startDevOidcProvider({ ...providerOptions(callbackOf('late')), port: latePort });
    const { browser, callbackUrl } = await throughProvider('late', 'carol@example.com');
    const res = await browser.request(callbackUrl);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { identity: OAuthIdentity }).identity).toEqual({
      provider: 'late',
      subject: 'carol@example.com',
      email: 'carol@example.com',
      name: 'Carol',
    });

    // A restart brings new signing keys. openid-client refetches a JWKS older than a minute by itself;
    // a younger one lacks the new key, so that login fails (401) and the next one discovers afresh.
    await late.close();
    late = await startDevOidcProvider({ ...providerOptions(callbackOf('late')), port: latePort });
    const first = await throughProvider('late');
    const firstRes = await first.browser.request(first.callbackUrl);
    if (firstRes.status !== 200) {
      expect(firstRes.status).toBe(401);
      expect(await errorOf(firstRes)).toBe('Invalid id_token');
    }
    const second = await throughProvider('late');
    expect((await second.browser.request(second.callbackUrl)).status).toBe(200);
  });
});
