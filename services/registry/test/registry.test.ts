import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateServiceKey } from '@halo/kit/auth';
import { startTestService, type TestService } from '@halo/kit/testing';
import { bearer, post, signUp, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { TRUST_MISCONFIGURED } from '../src/rest/principal';
import { registryService, type RegistryService } from '../src/service';
import { call, catalogWith, contractOf, serviceToken } from './helpers';

/**
 * The registry over HTTP against real Postgres, with a real auth (and content behind it) for the
 * API-key path: bootstrap, who may do what, publish, checks against usage, rollback, concurrency.
 */
const ROOT = resolve(__dirname, '../../..');
let auth: TestSystem;
let reg: TestService<RegistryService>;
let schemaKey: string;
let catalogKey: string;
let otherKey: string;
let userToken: string;

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const key = async (scopes: string[]) =>
    (await post(auth.base, '/auth/api-keys', { name: 'ci', scopes }, bearer(admin.token))).body.data.key as string;
  schemaKey = await key(['schema:write']);
  catalogKey = await key(['schema:write:catalog']);
  otherKey = await key(['catalog:write']);
  userToken = (await signUp(auth.base)).token;
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

const as = {
  catalog: () => serviceToken('catalog'),
  gateway: () => serviceToken('gateway'),
  admin: async () => ({ 'x-api-key': schemaKey }),
};

describe('bootstrap', () => {
  it('imports the committed files as version 1 of every service, and composes them byte for byte', async () => {
    const list = await call(reg.base, 'GET', '/v1/services', undefined, await as.gateway());
    expect(list.status).toBe(200);
    expect(list.body.services.map((s: any) => [s.service, s.version, s.author])).toEqual([
      ['auth', 1, 'bootstrap'],
      ['catalog', 1, 'bootstrap'],
      ['chat', 1, 'bootstrap'],
      ['content', 1, 'bootstrap'],
      ['payments', 1, 'bootstrap'],
    ]);
    const sg = await call(reg.base, 'GET', '/v1/supergraph', undefined, await as.gateway());
    expect(sg.status).toBe(200);
    expect(sg.body.composition).toBe(1);
    expect(sg.body.supergraph).toBe(readFileSync(resolve(ROOT, 'gateway/supergraph.graphql'), 'utf8'));
    expect(`${JSON.stringify(sg.body.routes, null, 2)}\n`).toBe(readFileSync(resolve(ROOT, 'gateway/routes.json'), 'utf8'));
    expect(`${JSON.stringify(sg.body.openapi, null, 2)}\n`).toBe(readFileSync(resolve(ROOT, 'gateway/openapi.json'), 'utf8'));
    expect(sg.headers.get('etag')).toBe(`"${sg.body.hash}"`);
    const again = await call(reg.base, 'GET', '/v1/supergraph', undefined, {
      ...(await as.gateway()),
      'if-none-match': `"${sg.body.hash}"`,
    });
    expect(again.status).toBe(304);
  });

  it('a contract equal to the bootstrapped one publishes nothing (same hash)', async () => {
    const res = await call(reg.base, 'POST', '/v1/publish', { contract: contractOf('content') }, await serviceToken('content'));
    expect([res.status, res.body]).toEqual([200, { unchanged: true, version: 1, composition: 1 }]);
  });
});

describe('who may call', () => {
  const contract = () => catalogWith('refusedField: String');
  it('401 Token required without credentials (HALO_ENV is not development), 401 Invalid token with bad ones', async () => {
    for (const [method, path] of [
      ['GET', '/v1/supergraph'],
      ['GET', '/v1/services'],
      ['POST', '/v1/check'],
      ['POST', '/v1/publish'],
      ['POST', '/v1/rollback'],
      ['POST', '/v1/usage'],
      ['GET', '/v1/gateways'],
      ['GET', '/v1/services/catalog/versions'],
    ] as const) {
      const body = method === 'POST' ? { contract: contract() } : undefined;
      expect([path, (await call(reg.base, method, path, body)).body]).toEqual([path, { error: 'Token required' }]);
      const bad = await call(reg.base, method, path, body, { 'x-halo-service-token': 'nope' });
      expect([path, bad.status, bad.body]).toEqual([path, 401, { error: 'Invalid token' }]);
    }
    expect((await call(reg.base, 'GET', '/v1/services', undefined, await serviceToken('catalog', 'auth'))).status).toBe(401);
    const wrongKey = await call(reg.base, 'GET', '/v1/services', undefined, {
      'x-api-key': 'halo_00000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    });
    expect([wrongKey.status, wrongKey.body]).toEqual([401, { error: 'Invalid token' }]);
  });

  it('403 for a service publishing, checking or rolling back another service’s contract, and for an admin key without schema:write', async () => {
    for (const path of ['/v1/check', '/v1/publish']) {
      const res = await call(reg.base, 'POST', path, { contract: contract() }, await serviceToken('content'));
      expect([path, res.status, res.body]).toEqual([path, 403, { error: 'Forbidden' }]);
      const key = await call(reg.base, 'POST', path, { contract: contract() }, { 'x-api-key': otherKey });
      expect([path, key.status, key.body]).toEqual([path, 403, { error: 'Forbidden' }]);
    }
    expect((await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 1 }, await serviceToken('payments'))).status).toBe(403);
    // A user's own bearer token is not a way in at all.
    expect((await call(reg.base, 'GET', '/v1/services', undefined, bearer(userToken))).status).toBe(401);
  });

  it('403 for usage from anyone but the gateway', async () => {
    const body = { gateway: { id: 'x', composition: 1 }, reports: [] };
    expect((await call(reg.base, 'POST', '/v1/usage', body, await as.catalog())).status).toBe(403);
    expect((await call(reg.base, 'POST', '/v1/usage', body, await as.admin())).status).toBe(403);
    expect((await call(reg.base, 'POST', '/v1/usage', body, await as.gateway())).status).toBe(202);
  });

  it('a key with schema:write:catalog may check catalog only: 403 for every other service, publish and rollback too', async () => {
    const mine = await call(reg.base, 'POST', '/v1/check', { contract: contract() }, { 'x-api-key': catalogKey });
    expect([mine.status, mine.body.ok]).toEqual([200, true]);
    const payments = contractOf('payments');
    for (const [path, body] of [
      ['/v1/check', { contract: payments }],
      ['/v1/publish', { contract: payments }],
      ['/v1/rollback', { service: 'payments', to: 1 }],
    ] as const) {
      const res = await call(reg.base, 'POST', path, body, { 'x-api-key': catalogKey });
      expect([path, res.status, res.body]).toEqual([path, 403, { error: 'Forbidden' }]);
    }
  });

  it('a registry auth does not trust: 503 saying what to fix, never a 500', async () => {
    // Its own signing key, which auth's SERVICE_TRUSTED_KEYS does not hold.
    const rogue = await startTestService(registryService, {
      AUTH_GRPC_ADDR: auth.grpcAddr,
      SERVICE_SIGNING_KEY: JSON.stringify(generateServiceKey('registry', 'rogue').privateJwk),
    });
    try {
      const res = await call(rogue.base, 'POST', '/v1/check', { contract: contract() }, await as.admin());
      expect(res.status).toBe(503);
      expect(res.body.error).toBe(`Service unavailable: ${TRUST_MISCONFIGURED} (Invalid service token)`);
    } finally {
      await rogue.close();
    }
  });

  it('an admin API key with schema:write (exchanged through the real auth) may check any service', async () => {
    const res = await call(reg.base, 'POST', '/v1/check', { contract: contract() }, await as.admin());
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
  });
});

describe('publish', () => {
  it('an additive change: 201, a new version and composition, listed; the check before it changed nothing', async () => {
    const contract = catalogWith('sku: String');
    const checked = await call(reg.base, 'POST', '/v1/check', { contract }, await as.catalog());
    expect(checked.body.report).toMatchObject({ ok: true, service: 'catalog', composition: { ok: true }, rest: { ok: true } });
    expect(checked.body.report.changes).toEqual([expect.objectContaining({ path: 'Product.sku', breaking: false })]);
    expect((await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await as.catalog())).body.versions).toHaveLength(1);

    const res = await call(reg.base, 'POST', '/v1/publish', { contract }, await as.catalog());
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ version: 2, composition: 2, report: { ok: true } });
    const sg = await call(reg.base, 'GET', '/v1/supergraph', undefined, await as.gateway());
    expect(sg.body.supergraph).toContain('sku: String');
    expect(sg.body.services.catalog).toBe(2);
    const versions = (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await as.gateway())).body.versions;
    expect(versions.map((v: any) => [v.version, v.author])).toEqual([
      [2, 'service:catalog'],
      [1, 'bootstrap'],
    ]);
    const again = await call(reg.base, 'POST', '/v1/publish', { contract }, await as.catalog());
    expect([again.status, again.body]).toEqual([200, { unchanged: true, version: 2, composition: 2 }]);
  });

  it('a contract that does not compose: 422 Check failed naming the error, and nothing changes', async () => {
    const before = (await call(reg.base, 'GET', '/v1/supergraph', undefined, await as.gateway())).body.composition;
    const broken = contractOf('catalog');
    broken.sdl = `${broken.sdl}\nextend type Query { user(id: ID!): Int }`;
    const res = await call(reg.base, 'POST', '/v1/publish', { contract: broken }, await as.catalog());
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('Check failed');
    expect(res.body.report.composition.ok).toBe(false);
    expect(res.body.report.composition.errors.join('\n')).toMatch(/user/);
    expect((await call(reg.base, 'GET', '/v1/supergraph', undefined, await as.gateway())).body.composition).toBe(before);
    expect((await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await as.gateway())).body.versions[0].version).toBe(2);
  });

  it('REST routes that collide with another service’s: 422 naming both', async () => {
    const c = contractOf('catalog');
    c.rest!.routes.push({ service: 'catalog', method: 'GET', path: '/hello' });
    const res = await call(reg.base, 'POST', '/v1/check', { contract: c }, await as.catalog());
    expect(res.body.ok).toBe(false);
    expect(res.body.report.rest.errors).toEqual(['GET /hello is declared by content and by catalog']);
  });

  it('a malformed contract is 400 naming the field', async () => {
    const res = await call(reg.base, 'POST', '/v1/publish', { contract: { ...contractOf('catalog'), url: 'nope' } }, await as.catalog());
    expect([res.status, res.body]).toEqual([400, { error: 'contract.url: url must be an http(s) URL' }]);
  });
});

describe('breaking changes against usage', () => {
  const withoutDescription = () => {
    const c = catalogWith('sku: String');
    c.sdl = c.sdl!.replace(/\n\s*description: String!/, '');
    return c;
  };

  it('a removal nobody used passes the check with a note', async () => {
    const res = await call(reg.base, 'POST', '/v1/check', { contract: withoutDescription() }, await as.catalog());
    expect(res.body.ok).toBe(true);
    expect(res.body.report.changes).toEqual([
      expect.objectContaining({ type: 'FIELD_REMOVED', path: 'Product.description', breaking: true, usage: { count: 0, operations: [] } }),
    ]);
    expect(res.body.report.notes).toEqual(['Product.description: breaking, but unused in the last 7 days']);
  });

  it('a removal of a field an operation used in the window is refused, naming the operation, client and count', async () => {
    const hour = new Date().toISOString();
    const report = (client: string, count: number) => ({
      hour,
      client,
      operation: { hash: 'op1', name: 'ProductPage', body: 'query ProductPage { product(id: 1) { name description } }' },
      coordinates: ['Query', 'Query.product', 'Query.product.id', 'Product', 'Product.name', 'Product.description'],
      count,
    });
    const sent = await call(
      reg.base,
      'POST',
      '/v1/usage',
      { gateway: { id: 'gw-1', composition: 2 }, reports: [report('web', 3), report('web', 4), report('ios', 5)] },
      await as.gateway(),
    );
    expect(sent.status).toBe(202);
    const res = await call(reg.base, 'POST', '/v1/publish', { contract: withoutDescription() }, await as.catalog());
    expect(res.status).toBe(422);
    const change = res.body.report.changes.find((c: any) => c.path === 'Product.description');
    expect(change.usage).toEqual({
      count: 12,
      operations: [
        { name: 'ProductPage', hash: 'op1', client: 'web', clientVersion: null, count: 7, lastSeen: expect.any(String) },
        { name: 'ProductPage', hash: 'op1', client: 'ios', clientVersion: null, count: 5, lastSeen: expect.any(String) },
      ],
    });
    expect(res.body.report.notes[0]).toMatch(
      /^Product\.description: breaking and used 12 times in the last 7 days by ProductPage \(web, 7\)/,
    );
    const gateways = (await call(reg.base, 'GET', '/v1/gateways', undefined, await as.admin())).body.gateways;
    expect(gateways).toContainEqual({ id: 'gw-1', composition: 2, lastSeen: expect.any(String) });
  });

  it('acknowledged, it goes through and the acknowledgement is recorded with its reason and author', async () => {
    const res = await call(
      reg.base,
      'POST',
      '/v1/publish',
      { contract: withoutDescription(), acknowledge: 'web and ios told in #api' },
      await as.admin(),
    );
    expect(res.status).toBe(201);
    expect(res.body.report.changes[0]).toMatchObject({ path: 'Product.description', acknowledged: true });
    const { rows } = await reg.db.query<{ path: string; reason: string; author: string; version: number }>(
      'SELECT path, reason, author, version FROM acknowledgements',
    );
    expect(rows).toEqual([
      {
        path: 'Product.description',
        reason: 'web and ios told in #api',
        author: expect.stringMatching(/^admin:Root/),
        version: res.body.version,
      },
    ]);
  });
});

describe('history, and rollback to a chosen version', () => {
  const versions = async () => (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await as.catalog())).body.versions;

  it('the history says what each version changed, who published it, and the acknowledgement', async () => {
    const [v3, v2, v1] = await versions();
    expect(v3).toMatchObject({
      version: 3,
      author: expect.stringMatching(/^admin:Root/),
      acknowledgement: 'web and ios told in #api',
      rollbackOf: null,
      changes: [{ type: 'FIELD_REMOVED', path: 'Product.description', message: expect.any(String), breaking: true, acknowledged: true }],
    });
    expect(v2).toMatchObject({
      version: 2,
      acknowledgement: null,
      changes: [expect.objectContaining({ path: 'Product.sku', breaking: false })],
    });
    // The bootstrap changed nothing against an earlier composition: nothing recorded.
    expect(v1).toMatchObject({ version: 1, author: 'bootstrap', changes: null });
  });

  it('one version read back whole; 404 for one that does not exist, 400 for one that is not a number', async () => {
    const v2 = await call(reg.base, 'GET', '/v1/services/catalog/versions/2', undefined, await as.catalog());
    expect(v2.status).toBe(200);
    expect(v2.body).toMatchObject({ service: 'catalog', version: 2, author: 'service:catalog', contract: { service: 'catalog' } });
    expect(v2.body.contract.sdl).toContain('sku: String');
    expect(v2.body.contract.sdl).toContain('description: String!');
    expect(v2.body.contract.rest.routes.length).toBeGreaterThan(0);
    const missing = await call(reg.base, 'GET', '/v1/services/catalog/versions/99', undefined, await as.catalog());
    expect([missing.status, missing.body]).toEqual([404, { error: 'catalog has no version 99' }]);
    const bad = await call(reg.base, 'GET', '/v1/services/catalog/versions/two', undefined, await as.catalog());
    expect([bad.status, bad.body]).toEqual([400, { error: 'version must be a version number' }]);
  });

  it('two versions compared: the change list a check prints, both ways, and a text diff', async () => {
    const diff = async (from: number, to: number) =>
      (await call(reg.base, 'GET', `/v1/services/catalog/diff?from=${from}&to=${to}`, undefined, await as.catalog())).body;
    const forward = await diff(2, 3);
    expect(forward.changes).toEqual([expect.objectContaining({ type: 'FIELD_REMOVED', path: 'Product.description', breaking: true })]);
    expect(forward.errors).toEqual([]);
    expect(forward.text).toMatch(/^--- catalog@v2/m);
    expect(forward.text).toMatch(/^-\s+description: String!/m);
    expect((await diff(3, 2)).changes).toEqual([expect.objectContaining({ path: 'Product.description', breaking: false })]);
    expect((await diff(1, 2)).changes).toEqual([expect.objectContaining({ path: 'Product.sku', breaking: false })]);
    const missing = await call(reg.base, 'GET', '/v1/services/catalog/diff?from=2', undefined, await as.catalog());
    expect([missing.status, missing.body]).toEqual([400, { error: 'to must be a version number' }]);
  });

  it('a moved routing URL is a reported change', async () => {
    const url = 'http://catalog.elsewhere:8080';
    const res = await call(reg.base, 'POST', '/v1/check', { contract: { ...catalogWith('sku: String'), url } }, await as.catalog());
    expect(res.body.report.changes).toContainEqual(
      expect.objectContaining({ type: 'SERVICE_URL_CHANGED', path: 'url', breaking: false, message: expect.stringContaining(url) }),
    );
  });

  it('rollback needs an explicit target: 400 without one, 404 to a version that does not exist', async () => {
    const none = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog' }, await as.catalog());
    expect(none.status).toBe(400);
    expect(none.body.error).toMatch(/^to is required/);
    const bad = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 'two' }, await as.catalog());
    expect([bad.status, bad.body]).toEqual([400, { error: 'to must be a version number (an integer from 1)' }]);
    const missing = await call(reg.base, 'POST', '/v1/rollback', { service: 'chat', to: 7 }, await as.admin());
    expect([missing.status, missing.body]).toEqual([404, { error: 'chat has no version 7' }]);
  });

  it('rollback --to 2 republishes v2 as v4 after the same checks; the same rollback again changes nothing (no toggle)', async () => {
    const [, v2] = await versions();
    const res = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 2 }, await as.catalog());
    expect(res.status).toBe(201);
    expect(res.body.version).toBe(4);
    const [latest] = await versions();
    expect(latest).toMatchObject({ version: 4, hash: v2.hash, rollbackOf: 2, author: 'service:catalog' });
    expect(latest.changes).toEqual([expect.objectContaining({ path: 'Product.description', breaking: false })]);
    const again = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 2 }, await as.catalog());
    expect([again.status, again.body]).toEqual([200, { unchanged: true, version: 4, composition: expect.any(Number) }]);
    expect((await versions())[0].version).toBe(4);
  });

  it('a rollback that would break used fields is refused as a publish is (422), and nothing changes', async () => {
    // v3 removed Product.description, which ProductPage used 12 times in the window.
    const res = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 3 }, await as.catalog());
    expect(res.status).toBe(422);
    expect(res.body.report.notes[0]).toMatch(/^Product\.description: breaking and used 12 times/);
    expect((await versions())[0].version).toBe(4);
  });
});

describe('REST changes', () => {
  /** catalog's contract without one of its routes (and that route's operation in its OpenAPI part). */
  const catalogWithout = (method: string, path: string) => {
    const c = contractOf('catalog');
    c.rest!.routes = c.rest!.routes.filter((r) => !(r.method === method && r.path === path));
    const openapiPath = path.replace(/:(\w+)/g, '{$1}');
    delete c.rest!.openapi.paths[openapiPath]?.[method.toLowerCase()];
    if (Object.keys(c.rest!.openapi.paths[openapiPath] ?? {}).length === 0) delete c.rest!.openapi.paths[openapiPath];
    return c;
  };

  it('a removed route is breaking and, with no REST usage to weigh, refused until acknowledged', async () => {
    const contract = catalogWithout('DELETE', '/products/:id');
    const check = await call(reg.base, 'POST', '/v1/check', { contract }, await as.catalog());
    expect(check.body.ok).toBe(false);
    const rest = check.body.report.changes.filter((c: any) => c.type.startsWith('REST_'));
    expect(rest).toEqual(
      ['v1', 'v2'].map((v) =>
        expect.objectContaining({ type: 'REST_ROUTE_REMOVED', path: `DELETE /products/:id ${v}`, breaking: true, acknowledged: false }),
      ),
    );
    expect(check.body.report.notes.filter((n: string) => n.startsWith('DELETE'))).toEqual(
      ['v1', 'v2'].map((v) => `DELETE /products/:id ${v}: breaking; REST calls are not recorded, so it needs an acknowledgement`),
    );
    expect((await call(reg.base, 'POST', '/v1/publish', { contract }, await as.catalog())).status).toBe(422);
    const acked = await call(reg.base, 'POST', '/v1/publish', { contract, acknowledge: 'admin UI retired' }, await as.admin());
    expect(acked.status).toBe(201);
    const served = (await call(reg.base, 'GET', '/v1/supergraph', undefined, await as.gateway())).body;
    expect(served.routes.routes.some((r: any) => r.method === 'DELETE' && r.path === '/products/:id')).toBe(false);
  });
});

it('two publishes at once are composed one after the other: neither is lost', async () => {
  const content = contractOf('content');
  content.sdl = content.sdl!.replace(/(type User @key[^{]*\{)/, '$1\n  nickname: String');
  const [a, b] = await Promise.all([
    call(reg.base, 'POST', '/v1/publish', { contract: catalogWith('barcode: String') }, await as.catalog()),
    call(reg.base, 'POST', '/v1/publish', { contract: content }, await serviceToken('content')),
  ]);
  expect([a.status, b.status]).toEqual([201, 201]);
  expect(new Set([a.body.composition, b.body.composition]).size).toBe(2);
  const sg = (await call(reg.base, 'GET', '/v1/supergraph', undefined, await as.gateway())).body;
  expect(sg.composition).toBe(Math.max(a.body.composition, b.body.composition));
  expect(sg.supergraph).toContain('barcode: String');
  expect(sg.supergraph).toContain('nickname: String');
});
