import { createHash, randomBytes } from 'node:crypto';
import { ConfigError } from '@halo/kit/config';
import { TestBrowser } from '@halo/kit/testing';
import { accountFor, loadDevOidcConfig, startDevOidcProvider, type DevOidcProvider } from './dev-oidc';

const CLIENT_ID = 'halo-test';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const REDIRECT_URI = 'http://127.0.0.1:9/auth/oauth/dev/callback'; // never fetched: the test reads Location

let oidc: DevOidcProvider;
let meta: Record<string, string>;

beforeAll(async () => {
  oidc = await startDevOidcProvider({
    host: '127.0.0.1',
    port: 0,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUris: [REDIRECT_URI],
  });
  meta = (await (await fetch(`${oidc.issuer}/.well-known/openid-configuration`)).json()) as Record<string, string>;
});
afterAll(() => oidc.close());

interface Authz {
  url: string;
  state: string;
  nonce: string;
  verifier: string;
}

function authorizationRequest(extra: Record<string, string> = {}): Authz {
  const state = randomBytes(16).toString('base64url');
  const nonce = randomBytes(16).toString('base64url');
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL(meta.authorization_endpoint!);
  const params = {
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: 'openid email profile',
    state,
    nonce,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return { url: url.href, state, nonce, verifier };
}

/** Authorization request → login form → POST → back at the client's redirect_uri. */
async function signIn(email: string, authz = authorizationRequest()): Promise<{ callback: URL; browser: TestBrowser }> {
  const browser = new TestBrowser();
  const form = await browser.follow(authz.url, oidc.issuer);
  expect(form.res.status).toBe(200);
  const page = await form.res.text();
  expect(page).toContain('Sign in');
  const action = /action="([^"]+\/login)"/.exec(page)![1]!;
  const posted = await browser.request(new URL(action, form.url).href, { email });
  expect(posted.status).toBe(303);
  const done = await browser.follow(new URL(posted.headers.get('location')!, form.url).href, oidc.issuer);
  expect(done.url.startsWith(REDIRECT_URI)).toBe(true);
  return { callback: new URL(done.url), browser };
}

function token(code: string, verifier: string) {
  return fetch(meta.token_endpoint!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
    }).toString(),
  });
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe('dev OpenID provider', () => {
  it('serves a discovery document for its loopback issuer', () => {
    expect(oidc.issuer).toBe(`http://127.0.0.1:${oidc.port}`);
    expect(meta).toMatchObject({ issuer: oidc.issuer });
    for (const endpoint of ['authorization_endpoint', 'token_endpoint', 'jwks_uri']) {
      expect(meta[endpoint]).toMatch(new RegExp(`^${oidc.issuer}/`));
    }
    expect(meta).toMatchObject({ code_challenge_methods_supported: ['S256'], response_types_supported: ['code'] });
    expect(meta.scopes_supported).toEqual(expect.arrayContaining(['openid', 'email', 'profile']));
  });

  it('publishes an RS256 signing key', async () => {
    const jwks = (await (await fetch(meta.jwks_uri!)).json()) as { keys: Record<string, unknown>[] };
    expect(jwks.keys).toEqual([expect.objectContaining({ kty: 'RSA', alg: 'RS256', use: 'sig' })]);
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });

  it('runs the code flow non-interactively and issues an id_token with the account claims', async () => {
    const authz = authorizationRequest();
    const { callback } = await signIn('alice@halo.local', authz);
    expect(callback.searchParams.get('state')).toBe(authz.state);
    expect(callback.searchParams.get('iss')).toBe(oidc.issuer);
    const code = callback.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const res = await token(code, authz.verifier);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id_token: string; access_token: string; token_type: string };
    expect(body.token_type).toBe('Bearer');
    expect(claimsOf(body.id_token)).toMatchObject({
      iss: oidc.issuer,
      aud: CLIENT_ID,
      sub: 'alice@halo.local',
      email: 'alice@halo.local',
      email_verified: true,
      name: 'Alice',
      nonce: authz.nonce,
    });
    // A code works once.
    expect((await token(code, authz.verifier)).status).toBe(400);
  });

  it('remembers the sign-in in the browser (single sign-on, no second form)', async () => {
    const { browser } = await signIn('bob@halo.local');
    const authz = authorizationRequest();
    const again = await browser.follow(authz.url, oidc.issuer);
    expect(again.url.startsWith(REDIRECT_URI)).toBe(true);
    const code = new URL(again.url).searchParams.get('code')!;
    const body = (await (await token(code, authz.verifier)).json()) as { id_token: string };
    expect(claimsOf(body.id_token)).toMatchObject({ sub: 'bob@halo.local', nonce: authz.nonce });
  });

  it('signs in any other address too, named after its local part', async () => {
    const authz = authorizationRequest();
    const { callback } = await signIn('Carol.Smith@Example.com', authz);
    const body = (await (await token(callback.searchParams.get('code')!, authz.verifier)).json()) as { id_token: string };
    expect(claimsOf(body.id_token)).toMatchObject({ email: 'carol.smith@example.com', email_verified: true, name: 'Carol Smith' });
  });

  it('rejects a wrong PKCE verifier at the token endpoint', async () => {
    const authz = authorizationRequest();
    const { callback } = await signIn('bob@halo.local', authz);
    const res = await token(callback.searchParams.get('code')!, randomBytes(32).toString('base64url'));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('requires PKCE with S256', async () => {
    for (const extra of [{ code_challenge: '' }, { code_challenge_method: 'plain' }] as Record<string, string>[]) {
      const { url } = authorizationRequest(extra);
      const done = await new TestBrowser().follow(url, oidc.issuer);
      const back = new URL(done.url);
      expect(back.href.startsWith(REDIRECT_URI)).toBe(true);
      expect(back.searchParams.get('error')).toBe('invalid_request');
    }
  });

  it('returns access_denied to the client when the user cancels', async () => {
    const authz = authorizationRequest();
    const browser = new TestBrowser();
    const form = await browser.follow(authz.url, oidc.issuer);
    const action = /action="([^"]+\/abort)"/.exec(await form.res.text())![1]!;
    const posted = await browser.request(new URL(action, form.url).href, {});
    const done = await browser.follow(new URL(posted.headers.get('location')!, form.url).href, oidc.issuer);
    const back = new URL(done.url);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe(authz.state);
  });

  it('keeps the form on an unusable login name and never redirects to an unregistered redirect_uri', async () => {
    const browser = new TestBrowser();
    const form = await browser.follow(authorizationRequest().url, oidc.issuer);
    const action = /action="([^"]+\/login)"/.exec(await form.res.text())![1]!;
    const res = await browser.request(new URL(action, form.url).href, { email: 'not an email' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Enter an email address.');

    const evil = await new TestBrowser().request(authorizationRequest({ redirect_uri: 'http://127.0.0.1:9/evil' }).url);
    expect(evil.status).toBe(400);
    expect(evil.headers.get('location')).toBeNull();
  });

  it('answers an interaction without its cookie with an error page, not a crash', async () => {
    const res = await fetch(`${oidc.issuer}/interaction/unknown`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
  });
});

describe('dev OpenID provider accounts and config', () => {
  it('treats the login name as the email', () => {
    expect(accountFor('alice@halo.local', new Map([['alice@halo.local', 'Alice']]))).toEqual({ email: 'alice@halo.local', name: 'Alice' });
    expect(accountFor(' Dave ')).toEqual({ email: 'dave@halo.local', name: 'Dave' });
    expect(accountFor('')).toBeUndefined();
    expect(accountFor('a@b@c')).toBeUndefined();
    expect(accountFor('<script>@x')).toBeUndefined();
  });

  it('refuses to start with an unusable redirect URI', async () => {
    const opts = { host: '127.0.0.1', port: 0, clientId: 'c', clientSecret: 's' };
    await expect(startDevOidcProvider({ ...opts, redirectUris: ['not a url'] })).rejects.toThrow('invalid redirect URI');
    await expect(startDevOidcProvider({ ...opts, redirectUris: [] })).rejects.toThrow('invalid redirect URI');
  });

  const vars = {
    DEV_OIDC_CLIENT_ID: 'halo-dev',
    DEV_OIDC_CLIENT_SECRET: 'secret',
    DEV_OIDC_REDIRECT_URIS: 'http://127.0.0.1:4000/auth/oauth/dev/callback, http://localhost:4000/cb',
  };

  it('reads the launcher environment', () => {
    expect(loadDevOidcConfig(vars)).toMatchObject({
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: 4009,
      DEV_OIDC_REDIRECT_URIS: ['http://127.0.0.1:4000/auth/oauth/dev/callback', 'http://localhost:4000/cb'],
    });
  });

  it.each([
    [{ DEV_OIDC_CLIENT_SECRET: undefined }, /DEV_OIDC_CLIENT_SECRET/],
    [{ DEV_OIDC_REDIRECT_URIS: 'not a url' }, /DEV_OIDC_REDIRECT_URIS: must be a comma-separated list of URLs/],
    [{ HTTP_HOST: '0.0.0.0' }, /HTTP_HOST: must be a loopback address/],
  ])('names the bad variable (%o)', (override, message) => {
    expect(() => loadDevOidcConfig({ ...vars, ...override })).toThrow(ConfigError);
    expect(() => loadDevOidcConfig({ ...vars, ...override })).toThrow(message);
  });
});
