import { startTestService, type TestService } from '@halo/kit/testing';
import { bearer, post, signUp, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { serviceToken } from './helpers';

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
let userToken: string;

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const key = async (token: string, scopes: string[]) =>
    (await post(auth.base, '/auth/api-keys', { name: 'studio', scopes }, bearer(token))).body.data.key as string;
  readKey = await key(admin.token, ['schema:read']);
  otherKey = await key(admin.token, ['catalog:write']);
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
  for (const path of ['/studio', '/studio/schema', '/studio/services/catalog', '/studio/checks', '/studio/usage/Product.price']) {
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
