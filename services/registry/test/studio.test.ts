import { startTestService, type TestService } from '@halo/kit/testing';
import { bearer, post, signUp, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { call, serviceToken } from './helpers';

/**
 * Who may open the Studio (docs/registry.md, "Studio"), outside development: nobody without a
 * credential (the sign-in page, 401); an admin API key with `schema:read` signs in (an httpOnly,
 * SameSite=Strict cookie scoped to /studio); a key without a schema scope, a user's key, a bad key:
 * refused on the sign-in page. What clients put into the registry is shown escaped. Real auth,
 * real Postgres.
 */
let auth: TestSystem;
let reg: TestService<RegistryService>;
let readKey: string;
let otherKey: string;
let opsKey: string;
let userToken: string;

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const key = async (token: string, scopes: string[]) =>
    (await post(auth.base, '/auth/api-keys', { name: 'studio', scopes }, bearer(token))).body.data.key as string;
  readKey = await key(admin.token, ['schema:read']);
  otherKey = await key(admin.token, ['catalog:write']);
  opsKey = await key(admin.token, ['operations:write']);
  // A user's own token signs in nowhere: only an admin's key is exchanged for a Studio session.
  userToken = (await signUp(auth.base)).token;
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${reg.base}${path}`, { headers, redirect: 'manual' });
const signIn = (apiKey: string, next = '/studio/usage') =>
  fetch(`${reg.base}/studio/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ apiKey, next }).toString(),
    redirect: 'manual',
  });

it('without a credential every page is the sign-in page, 401, with no data on it', async () => {
  for (const path of [
    '/studio',
    '/studio/schema',
    '/studio/services/catalog',
    '/studio/checks',
    '/studio/usage/Product.price',
    '/studio/clients',
  ]) {
    const res = await get(path);
    const body = await res.text();
    expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 401, 'text/html; charset=utf-8']);
    expect(body).toContain('<form method="post" action="/studio/sign-in">');
    expect(body).not.toContain('catalog v1');
  }
});

it('an admin key with schema:read signs in: a cookie scoped to /studio, httpOnly and SameSite=Strict; then the pages open', async () => {
  const res = await signIn(readKey);
  expect([res.status, res.headers.get('location')]).toEqual([303, '/studio/usage']);
  const cookie = res.headers.get('set-cookie')!;
  expect(cookie).toMatch(/^halo_studio=[^;]+; Path=\/studio; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
  const session = cookie.split(';')[0]!;
  for (const path of [
    '/studio',
    '/studio/schema',
    '/studio/schema/Product',
    '/studio/services/catalog',
    '/studio/checks',
    '/studio/usage',
    '/studio/clients',
  ]) {
    const page = await get(path, { cookie: session });
    expect([path, page.status]).toEqual([path, 200]);
  }
  // The key itself is never kept, and the page says who is looking.
  expect(await (await get('/studio', { cookie: session })).text()).not.toContain(readKey);
  // A session cookie that is not a token auth signed: back to the sign-in page.
  expect((await get('/studio', { cookie: 'halo_studio=forged' })).status).toBe(401);
});

it('refuses on the sign-in page: a bad key (401), an admin key without a schema scope (403); a user’s token opens nothing', async () => {
  const bad = await signIn('halo_00000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
  expect([bad.status, bad.headers.get('set-cookie')]).toEqual([401, null]);
  expect(await bad.text()).toContain('That API key is not valid.');
  const res = await signIn(otherKey);
  expect([res.status, res.headers.get('set-cookie')]).toEqual([403, null]);
  expect(await res.text()).toContain('schema:read or schema:write scope');
  // A user's bearer token (not an API key) is not accepted on the pages either.
  expect((await get('/studio', { authorization: `Bearer ${userToken}` })).status).toBe(401);
  expect((await signIn('')).status).toBe(400);
});

it('signs in only to a Studio page: another site in `next` goes to /studio', async () => {
  for (const next of ['https://evil.example/', '//evil.example/studio', '/studio/../v1/services', '/v1/services']) {
    expect([next, (await signIn(readKey, next)).headers.get('location')]).toEqual([next, '/studio']);
  }
});

it('shows what clients sent escaped, never as markup; the page allows no script at all', async () => {
  const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
  const evil = '<img src=x onerror=alert(1)>';
  const usage = await fetch(`${reg.base}/v1/usage`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(await serviceToken('gateway')) },
    body: JSON.stringify({
      gateway: { id: 'gw-1', composition: 1 },
      reports: [
        {
          hour,
          client: evil.slice(0, 64),
          operation: { hash: 'h1', name: evil, body: `query ${evil}` },
          coordinates: ['Product.price'],
          count: 3,
        },
      ],
    }),
  });
  expect(usage.status).toBe(202);
  const session = (await signIn(readKey)).headers.get('set-cookie')!.split(';')[0]!;
  for (const path of ['/studio/usage', '/studio/usage/Product.price']) {
    const res = await get(path, { cookie: session });
    const body = await res.text();
    expect(body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(body).not.toContain(evil);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  }
});

it('a malformed coordinate or version range is 400 on the page, an unknown type 404', async () => {
  const session = (await signIn(readKey)).headers.get('set-cookie')!.split(';')[0]!;
  expect((await get('/studio/usage/Product.price.x.y', { cookie: session })).status).toBe(400);
  expect((await get('/studio/services/catalog/versions/1..2', { cookie: session })).status).toBe(400);
  expect((await get('/studio/schema/NoSuchType', { cookie: session })).status).toBe(404);
});

describe('Clients: the operation lists client apps registered', () => {
  const SCRIPT = 'query X { products(category: "<script>") { data { id } } }';
  const ANONYMOUS = '{ users { id } }';
  const push = (client: string, version: string, operations: { id: string; body: string }[]) =>
    call(reg.base, 'POST', '/v1/operations', { client, version, operations }, { 'x-api-key': opsKey });
  const studio = async (path: string) => {
    const session = (await signIn(readKey)).headers.get('set-cookie')!.split(';')[0]!;
    const res = await get(path, { cookie: session });
    return { status: res.status, body: await res.text() };
  };
  /** The text of the table row holding `href`, tags dropped and spaces collapsed. */
  const rowOf = (body: string, href: string) => {
    const row = body.split('<tr').find((r) => r.includes(`href="${href}"`));
    return row === undefined
      ? undefined
      : `<tr${row}`
          .replace(/<[^>]*>/g, ' ')
          .replace(/\s+/g, ' ')
          .trim();
  };

  it('with none registered, says how to register; "Clients" is in the navigation', async () => {
    const { status, body } = await studio('/studio/clients');
    expect(status).toBe(200);
    expect(body).toContain('No client app has registered its operations yet.');
    expect(body).toContain('npm run operations -- push --client web --version 1.4.0 manifest.json');
    expect(body).toMatch(/<a href="\/studio\/clients"\s+aria-current="page">Clients<\/a>/);
    expect((await studio('/studio')).body).toMatch(/<a href="\/studio\/clients"\s*>Clients<\/a>/);
  });

  it('lists every client with its versions, newest push first: state, operations, pushed at and by; linked to each version', async () => {
    expect(
      (
        await push('web', '1.4.0', [
          { id: 'x-1', body: SCRIPT },
          { id: 'anon-1', body: ANONYMOUS },
        ])
      ).status,
    ).toBe(201);
    expect((await push('web', '1.5.0', [{ id: 'anon-1', body: ANONYMOUS }])).status).toBe(201);
    expect((await push('@halo/client', '1.0.0+build.5', [{ id: 'anon-1', body: ANONYMOUS }])).status).toBe(201);
    const retired = await call(reg.base, 'POST', '/v1/operations/retire', { client: 'web', version: '1.4.0' }, { 'x-api-key': opsKey });
    expect(retired.status).toBe(200);
    const { status, body } = await studio('/studio/clients');
    expect(status).toBe(200);
    expect(body).not.toContain('No client app has registered');
    expect(body).toContain('<h2>web</h2>');
    expect(body).toContain('<h2>@halo/client</h2>');
    expect(rowOf(body, '/studio/clients/web/1.5.0')).toMatch(/^1\.5\.0 active 1 \d{4}-\d\d-\d\d \d\d:\d\d UTC admin:.+$/);
    expect(rowOf(body, '/studio/clients/web/1.4.0')).toMatch(
      /^1\.4\.0 retired \d{4}-\d\d-\d\d \d\d:\d\d UTC 2 \d{4}-[-\d]+ [:\d]+ UTC admin:.+$/,
    );
    // The name and version percent-encoded: `@halo/client` stays one path segment.
    expect(rowOf(body, '/studio/clients/%40halo%2Fclient/1.0.0%2Bbuild.5')).toMatch(/^1\.0\.0\+build\.5 active 1 /);
    // Newest push first within a client.
    expect(body.indexOf('/studio/clients/web/1.5.0')).toBeLessThan(body.indexOf('/studio/clients/web/1.4.0'));
  });

  it('a version’s page: its operations by name (or anonymous), id and body, escaped; whether it is active or retired', async () => {
    const retired = await studio('/studio/clients/web/1.4.0');
    expect(retired.status).toBe(200);
    expect(retired.body).toContain('<title>web 1.4.0 · Halo Studio</title>');
    expect(retired.body).toMatch(/<span class="tag">retired<\/span> since <time/);
    expect(retired.body).toContain('<code>X</code>');
    expect(retired.body).toContain('<code>x-1</code>');
    expect(retired.body).toContain('<span class="muted">anonymous</span>');
    expect(retired.body).toContain('<pre>query X { products(category: &quot;&lt;script&gt;&quot;) { data { id } } }</pre>');
    expect(retired.body).not.toContain('<script>');
    const active = await studio(`/studio/clients/${encodeURIComponent('@halo/client')}/${encodeURIComponent('1.0.0+build.5')}`);
    expect(active.status).toBe(200);
    expect(active.body).toContain('<title>@halo/client 1.0.0+build.5 · Halo Studio</title>');
    expect(active.body).toContain('<span class="tag good">active</span> Its operations hold back a breaking change in checks');
    expect(active.body).toContain(`<pre>${ANONYMOUS}</pre>`);
    // A literal `+` in the path is the same version.
    expect((await studio('/studio/clients/%40halo%2Fclient/1.0.0+build.5')).status).toBe(200);
  });

  it('an unknown client or version is 404 on the page, a malformed name or version 400', async () => {
    for (const path of ['/studio/clients/web/9.9.9', '/studio/clients/ios/1.4.0']) {
      const res = await studio(path);
      expect([path, res.status]).toEqual([path, 404]);
      expect(res.body).toContain('<title>Not found · Halo Studio</title>');
    }
    expect((await studio('/studio/clients/web/9.9.9')).body).toContain('No operations registered for web 9.9.9');
    for (const path of [
      '/studio/clients/we%20b/1.4.0',
      '/studio/clients/web/1.4.0%20x',
      `/studio/clients/${'x'.repeat(65)}/1.0.0`,
      `/studio/clients/web/${'1'.repeat(65)}`,
      '/studio/clients/%3Cscript%3E/1.0.0',
      '/studio/clients/web/1.0.0%2F2',
    ]) {
      const res = await studio(path);
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.body).toContain('<title>Not possible · Halo Studio</title>');
      expect(res.body).not.toContain('<script>');
    }
  });

  it('without a credential, or with an operations key in the browser, the Clients pages show nothing', async () => {
    for (const path of ['/studio/clients', '/studio/clients/web/1.4.0']) {
      const res = await get(path);
      const body = await res.text();
      expect([path, res.status]).toEqual([path, 401]);
      expect(body).toContain('<form method="post" action="/studio/sign-in">');
      expect(body).not.toContain('products(');
      expect(body).not.toContain('anonymous');
    }
    // The sign-in asks for a schema scope, as for every page: an operations:write key is refused.
    const res = await signIn(opsKey, '/studio/clients');
    expect([res.status, res.headers.get('set-cookie')]).toEqual([403, null]);
  });
});
