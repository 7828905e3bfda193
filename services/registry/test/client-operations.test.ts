import { createHash } from 'node:crypto';
import { generateServiceKey, ServiceIdentity } from '@halo/kit/auth';
import { startTestService, testIdentityEnv, type TestService } from '@halo/kit/testing';
import { bearer, post, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { call, contractOf, serviceToken } from './helpers';

/**
 * Client operation lists (docs/registry.md, "Client operation lists"): a client team pushes the
 * operations a version of its app sends, each validated against the current API schema, and a
 * check refuses a breaking change one of them uses until the version is retired. Real Postgres,
 * a real auth for the keys.
 */
let auth: TestSystem;
let reg: TestService<RegistryService>;
const keys: Record<'ops' | 'ios' | 'read' | 'write' | 'none', string> = { ops: '', ios: '', read: '', write: '', none: '' };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const key = (k: keyof typeof keys) => ({ 'x-api-key': keys[k] });
const push = async (body: unknown, headers: Record<string, string> = key('ops')) => call(reg.base, 'POST', '/v1/operations', body, headers);
const retire = async (body: unknown, headers: Record<string, string> = key('ops')) =>
  call(reg.base, 'POST', '/v1/operations/retire', body, headers);
const get = async (path: string, headers: Record<string, string> = key('read')) => call(reg.base, 'GET', path, undefined, headers);

const NAMES = 'query ProductNames { products { data { id name } } }';
const PRICE = {
  id: 'price-1',
  body: 'query ProductPrice($id: ID!) { product(id: $id) { ...Priced } } fragment Priced on Product { price }',
};
const USERS = { id: 'users-1', body: 'query Users { users { id name } }' };
/**
 * Seven fields deep, the gateway's limit; one more field nested is eight. Both cost well under its
 * cost limit (one post, its ten comments), so depth alone decides.
 */
const DEEP7 = 'query Deep { posts(first: 1) { edges { node { comments { post { author { name } } } } } } }';
const DEEP8 = 'query TooDeep { posts(first: 1) { edges { node { comments { post { author { posts { title } } } } } } } }';
/**
 * Priced as the gateway prices a request that sends no variables (the limit: 1000, its default
 * GRAPHQL_MAX_COST): `first` is the variable's default, else `posts`' assumed size, 10; lists the
 * supergraph sizes nowhere count 10. 1 + 100 × (edge 1 + post 1 + 10 comments) = 1201 with 100; 961 with 80.
 */
const COSTLY = (first: number) =>
  `query ManyPosts($first: Int = ${first}) { posts(first: $first) { edges { node { title comments { body } } } } }`;
/** 1 + 10 × (edge 1 + post 1 + 10 × (comment 1 + author 1 + 10 posts)) = 1221, seven deep. */
const COSTLY_UNSIZED =
  'query AllComments($first: Int) { posts(first: $first) { edges { node { comments { author { posts { title } } } } } } }';

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const make = async (scopes: string[]) => {
    const res = await post(auth.base, '/auth/api-keys', { name: 'ops', scopes }, bearer(admin.token));
    expect([res.status, res.body.data.scopes]).toEqual([201, scopes]);
    return res.body.data.key as string;
  };
  keys.ops = await make(['operations:write']);
  keys.ios = await make(['operations:write:ios']);
  keys.read = await make(['schema:read']);
  keys.write = await make(['schema:write']);
  keys.none = await make(['catalog:write']);
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

describe('pushing a client version’s operations', () => {
  it('201 with its counts; the same list again 200 unchanged; another set 201 with what it added and removed', async () => {
    const names = { id: sha256(NAMES), body: NAMES };
    const first = await push({ client: 'web', version: '1.4.0', operations: [names, PRICE] });
    expect([first.status, first.body]).toEqual([201, { client: 'web', version: '1.4.0', operations: 2, added: 2, removed: 0 }]);
    const { pushedAt } = (await get('/v1/operations/web/1.4.0')).body;
    const again = await push({ client: 'web', version: '1.4.0', operations: [PRICE, names] });
    expect([again.status, again.body]).toEqual([
      200,
      { client: 'web', version: '1.4.0', operations: 2, added: 0, removed: 0, unchanged: true },
    ]);
    // Nothing was written: the list keeps the time of the push that made it.
    expect((await get('/v1/operations/web/1.4.0')).body.pushedAt).toBe(pushedAt);
    const next = await push({ client: 'web', version: '1.4.0', operations: [names, { ...USERS, name: 'AllUsers' }] });
    expect([next.status, next.body]).toEqual([201, { client: 'web', version: '1.4.0', operations: 2, added: 1, removed: 1 }]);
    const stored = await get('/v1/operations/web/1.4.0');
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual({
      client: 'web',
      version: '1.4.0',
      pushedAt: expect.any(String),
      pushedBy: expect.stringMatching(/^admin:/),
      retiredAt: null,
      operations: [
        { id: USERS.id, name: 'AllUsers', body: USERS.body },
        { id: sha256(NAMES), name: 'ProductNames', body: NAMES },
      ],
    });
  });

  it('refuses each invalid operation with its id, name and reason, and stores nothing of the push', async () => {
    const wrongSha = sha256('query Other { users { id } }');
    const res = await push({
      client: 'web',
      version: '2.0.0',
      operations: [
        { id: 'deep-7', body: DEEP7 },
        { id: 'unknown-field', body: 'query Broken { product(id: 1) { nope } }' },
        { id: 'deep-8', body: DEEP8 },
        { id: wrongSha, body: 'query Mine { users { name } }' },
        { id: 'two', body: 'query A { users { id } } query B { users { name } }' },
        { id: 'deep-7', body: DEEP7, name: 'Again' },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: '5 of 6 operations refused',
      refused: [
        {
          id: 'unknown-field',
          name: 'Broken',
          reason: 'invalid against the current API schema: Cannot query field "nope" on type "Product". Did you mean "name"?',
        },
        { id: 'deep-8', name: 'TooDeep', reason: 'depth 8 exceeds the limit of 7' },
        { id: wrongSha, name: 'Mine', reason: 'id is not the sha256 of its body' },
        { id: 'two', name: '', reason: 'holds 2 operations: a document holds exactly one (and any fragments)' },
        { id: 'deep-7', name: 'Again', reason: 'the same id is pushed twice' },
      ],
    });
    expect(await get('/v1/operations/web/2.0.0')).toMatchObject({ status: 404, body: { error: 'No operations registered for web 2.0.0' } });
    // An existing version keeps its list when a push to it is refused.
    const before = (await get('/v1/operations/web/1.4.0')).body;
    const refused = await push({ client: 'web', version: '1.4.0', operations: [{ id: 'x', body: 'query { nope }' }] });
    expect([refused.status, refused.body.error]).toEqual([400, '1 of 1 operations refused']);
    expect((await get('/v1/operations/web/1.4.0')).body).toEqual(before);
    // Seven deep is within the limit.
    expect((await push({ client: 'web', version: '2.0.0', operations: [{ id: 'deep-7', body: DEEP7 }] })).status).toBe(201);
  });

  it('refuses an operation whose estimated cost exceeds the gateway’s limit, naming it and its cost, and stores nothing', async () => {
    const res = await push({
      client: 'web',
      version: '2.1.0',
      operations: [
        { id: 'within', body: COSTLY(80) },
        { id: 'costly', body: COSTLY(100) },
        { id: 'unsized', body: COSTLY_UNSIZED },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: '2 of 3 operations refused',
      refused: [
        { id: 'costly', name: 'ManyPosts', reason: 'estimated cost 1201 exceeds the limit of 1000' },
        { id: 'unsized', name: 'AllComments', reason: 'estimated cost 1221 exceeds the limit of 1000' },
      ],
    });
    expect(await get('/v1/operations/web/2.1.0')).toMatchObject({ status: 404, body: { error: 'No operations registered for web 2.1.0' } });
  });

  it('400 naming the field of a malformed push, as POST /v1/usage', async () => {
    const op = { id: 'a', body: '{ users { id } }' };
    for (const [body, error] of [
      [{ client: 'we b', version: '1', operations: [op] }, 'client is invalid'],
      [{ client: 'x'.repeat(65), version: '1', operations: [op] }, 'client is invalid'],
      [{ client: 'web', version: '1 0', operations: [op] }, 'version is invalid'],
      [{ client: 'web', version: '1', operations: [] }, 'operations is invalid'],
      [{ client: 'web', version: '1', operations: [{ ...op, id: 'a b' }] }, 'operations.0.id is invalid'],
      [{ client: 'web', version: '1', operations: [op, { ...op, id: 'b', body: ' '.repeat(100_001) }] }, 'operations.1.body is invalid'],
      [{ client: 'web', version: '1', operations: [op], extra: true }, 'body is invalid'],
    ] as const) {
      const res = await push(body);
      expect([res.status, res.body]).toEqual([400, { error }]);
    }
  });

  it('lists every client version, newest push first, filters by client, and reads a percent-encoded name', async () => {
    const pushed = await push({ client: '@halo/client', version: '1.0.0+build.5', operations: [USERS] });
    expect(pushed.status).toBe(201);
    const one = await get(`/v1/operations/${encodeURIComponent('@halo/client')}/${encodeURIComponent('1.0.0+build.5')}`);
    expect([one.status, one.body.client, one.body.version, one.body.operations]).toEqual([
      200,
      '@halo/client',
      '1.0.0+build.5',
      [{ id: USERS.id, name: 'Users', body: USERS.body }],
    ]);
    const { clients } = (await get('/v1/operations')).body;
    expect(clients.map((c: any) => [c.client, c.version, c.operations, c.retiredAt])).toEqual([
      ['@halo/client', '1.0.0+build.5', 1, null],
      ['web', '2.0.0', 1, null],
      ['web', '1.4.0', 2, null],
    ]);
    expect(clients[0]).toEqual({
      client: '@halo/client',
      version: '1.0.0+build.5',
      operations: 1,
      pushedAt: expect.any(String),
      pushedBy: expect.stringMatching(/^admin:/),
      retiredAt: null,
    });
    expect((await get('/v1/operations?client=web')).body.clients.map((c: any) => c.version)).toEqual(['2.0.0', '1.4.0']);
    expect((await get('/v1/operations?client=nobody')).body).toEqual({ clients: [] });
    expect(await get('/v1/operations/web/9.9.9')).toMatchObject({ status: 404, body: { error: 'No operations registered for web 9.9.9' } });
  });
});

describe('checks hold breaking changes against registered operations', () => {
  const DESCRIPTIONS = { id: 'descriptions-1', body: 'query Descriptions { products { data { description } } }' };
  /** catalog without Product.description, which only Descriptions (shop 3.1.0) uses; no gateway ever sent it. */
  const withoutDescription = () => {
    const c = contractOf('catalog');
    c.sdl = c.sdl!.replace(/\n\s*description: String!/, '');
    return c;
  };
  const check = async (extra: Record<string, unknown> = {}) =>
    call(reg.base, 'POST', '/v1/check', { contract: withoutDescription(), ...extra }, key('write'));

  it('fails naming the client, its version and the operation; passes acknowledged, or with the client excluded', async () => {
    const pushed = await push({ client: 'shop', version: '3.1.0', operations: [DESCRIPTIONS] });
    expect(pushed.status).toBe(201);
    const { pushedAt } = (await get('/v1/operations/shop/3.1.0')).body;
    const refused = await check();
    expect(refused.status).toBe(200);
    expect(refused.body.ok).toBe(false);
    expect(refused.body.report.notes).toEqual([
      'Product.description: breaking and used by registered operations: Descriptions (shop 3.1.0)',
    ]);
    expect(refused.body.report.changes).toEqual([
      expect.objectContaining({
        path: 'Product.description',
        breaking: true,
        acknowledged: false,
        usage: {
          count: 0,
          operations: [
            {
              name: 'Descriptions',
              hash: 'descriptions-1',
              client: 'shop',
              clientVersion: '3.1.0',
              count: 0,
              lastSeen: pushedAt,
              registered: true,
            },
          ],
        },
      }),
    ]);
    const acknowledged = await check({ acknowledge: 'shop 3.1.0 is no longer sold' });
    expect([acknowledged.body.ok, acknowledged.body.report.notes]).toEqual([
      true,
      ['Product.description: breaking, acknowledged: shop 3.1.0 is no longer sold'],
    ]);
    expect((await check({ options: { excludeClients: ['shop'] } })).body.ok).toBe(true);
    // A threshold judges counted requests only: a registered operation blocks whatever it is.
    expect((await check({ options: { thresholdPercent: 100 } })).body.ok).toBe(false);
  });

  it('an enum value only a registered operation writes is held too (its coordinates read as the gateway reads them)', async () => {
    const NEWEST = { id: 'newest-1', body: 'query Newest { products(sort: CREATED_AT) { data { id } } }' };
    expect((await push({ client: 'sorter', version: '1.0.0', operations: [NEWEST] })).status).toBe(201);
    const c = contractOf('catalog');
    c.sdl = c.sdl!.replace(/\n\s*CREATED_AT\n/, '\n');
    const refused = await call(reg.base, 'POST', '/v1/check', { contract: c }, key('write'));
    expect(refused.body.ok).toBe(false);
    expect(refused.body.report.notes).toEqual([
      'ProductSort.CREATED_AT: breaking and used by registered operations: Newest (sorter 1.0.0)',
    ]);
    expect((await retire({ client: 'sorter', version: '1.0.0' })).status).toBe(200);
    expect((await call(reg.base, 'POST', '/v1/check', { contract: c }, key('write'))).body.ok).toBe(true);
  });

  it('a retired version blocks no more, takes no pushes (409), and retiring is idempotent', async () => {
    const first = await retire({ client: 'shop', version: '3.1.0' });
    expect([first.status, first.body]).toEqual([200, { client: 'shop', version: '3.1.0', retiredAt: expect.any(String) }]);
    const again = await retire({ client: 'shop', version: '3.1.0' });
    expect([again.status, again.body]).toEqual([200, first.body]);
    expect((await get('/v1/operations?client=shop')).body.clients[0].retiredAt).toBe(first.body.retiredAt);
    const late = await push({ client: 'shop', version: '3.1.0', operations: [DESCRIPTIONS] });
    expect([late.status, late.body]).toEqual([409, { error: 'shop 3.1.0 is retired' }]);
    const passed = await check();
    expect([passed.body.ok, passed.body.report.notes]).toEqual([true, ['Product.description: breaking, but unused in the last 7 days']]);
    expect(await retire({ client: 'shop', version: '9.9.9' })).toMatchObject({
      status: 404,
      body: { error: 'No operations registered for shop 9.9.9' },
    });
    expect((await retire({ client: 'shop' })).body).toEqual({ error: 'version is invalid' });
  });
});

describe('who may push and retire', () => {
  const list = (client: string) => ({ client, version: '1.0.0', operations: [USERS] });

  it('no credentials: 401; a service token, a schema key, a key without a registry scope: 403; nothing stored', async () => {
    for (const [headers, status, error] of [
      [{}, 401, 'Token required'],
      [await serviceToken('catalog'), 403, 'Forbidden'],
      [key('read'), 403, 'Forbidden'],
      [key('write'), 403, 'Forbidden'],
      [key('none'), 403, 'Forbidden'],
    ] as const) {
      const pushed = await push(list('web'), headers);
      const retired = await retire({ client: 'web', version: '1.4.0' }, headers);
      expect([pushed.status, pushed.body, retired.status, retired.body]).toEqual([status, { error }, status, { error }]);
    }
    expect((await get('/v1/operations/web/1.4.0')).body.retiredAt).toBeNull();
    expect((await get('/v1/operations?client=web')).body.clients.map((c: any) => c.version)).toEqual(['2.0.0', '1.4.0']);
  });

  it('operations:write:ios pushes and retires ios only (403 for web); it reads, as any reader does', async () => {
    const web = await push(list('web'), key('ios'));
    expect([web.status, web.body]).toEqual([403, { error: 'Forbidden' }]);
    expect((await retire({ client: 'web', version: '1.4.0' }, key('ios'))).status).toBe(403);
    const ios = await push(list('ios'), key('ios'));
    expect([ios.status, ios.body]).toEqual([201, { client: 'ios', version: '1.0.0', operations: 1, added: 1, removed: 0 }]);
    expect((await retire({ client: 'ios', version: '1.0.0' }, key('ios'))).status).toBe(200);
    expect((await get('/v1/operations/ios/1.0.0', key('ios'))).body.retiredAt).toEqual(expect.any(String));
    // An operations scope writes no contract.
    const checked = await call(reg.base, 'POST', '/v1/check', { contract: contractOf('catalog') }, key('ops'));
    expect([checked.status, checked.body]).toEqual([403, { error: 'Forbidden' }]);
    expect((await get('/v1/operations', key('none'))).status).toBe(403);
    expect((await get('/v1/operations', {})).status).toBe(401);
  });

  it('a bad per-client scope is refused when the key is made', async () => {
    const admin = await signUpAdmin(auth);
    const res = await post(auth.base, '/auth/api-keys', { name: 'x', scopes: ['operations:write:a b'] }, bearer(admin.token));
    expect([res.status, res.body]).toEqual([400, { error: 'unknown scope: operations:write:a b' }]);
  });
});

describe('the gateways’ feed: GET /v1/operations/active', () => {
  /** The answer as sent: its ETag must be the sha256 of this very text. */
  const feed = async (headers: Record<string, string> = key('read')) => {
    const res = await fetch(`${reg.base}/v1/operations/active`, { headers });
    return { status: res.status, etag: res.headers.get('etag'), cacheControl: res.headers.get('cache-control'), text: await res.text() };
  };
  const operationsOf = (text: string) => (JSON.parse(text) as { operations: unknown[] }).operations;
  /** What the describes above leave active: web 1.4.0, web 2.0.0, @halo/client 1.0.0+build.5 (shop 3.1.0 and ios 1.0.0 are retired). */
  const ACTIVE = [
    { id: USERS.id, body: USERS.body, client: '@halo/client', version: '1.0.0+build.5' },
    { id: sha256(NAMES), body: NAMES, client: 'web', version: '1.4.0' },
    { id: USERS.id, body: USERS.body, client: 'web', version: '1.4.0' },
    { id: 'deep-7', body: DEEP7, client: 'web', version: '2.0.0' },
  ];

  it('200: every operation of the active versions only, by client, version, id; a strong ETag, the sha256 of its text; no-cache', async () => {
    const res = await feed();
    expect([res.status, res.etag, res.cacheControl]).toEqual([200, `"${sha256(res.text)}"`, 'no-cache']);
    expect(JSON.parse(res.text)).toEqual({ operations: ACTIVE });
    expect(Object.keys(operationsOf(res.text)[0] as object)).toEqual(['id', 'body', 'client', 'version']);
    // A client named `active`: in the feed, and read with its version through /v1/operations/:client/:version.
    const pushed = await push({ client: 'active', version: '1.0.0', operations: [USERS, { id: 'names', body: NAMES }] });
    expect(pushed.status).toBe(201);
    const one = await get('/v1/operations/active/1.0.0');
    expect([one.status, one.body.client, one.body.version, one.body.operations.map((o: any) => o.id)]).toEqual([
      200,
      'active',
      '1.0.0',
      ['names', USERS.id],
    ]);
    expect(operationsOf((await feed()).text)).toEqual([
      ACTIVE[0],
      { id: 'names', body: NAMES, client: 'active', version: '1.0.0' },
      { id: USERS.id, body: USERS.body, client: 'active', version: '1.0.0' },
      ...ACTIVE.slice(1),
    ]);
    // Retired, its operations leave the feed (as shop 3.1.0's and ios 1.0.0's did).
    expect((await retire({ client: 'active', version: '1.0.0' })).status).toBe(200);
    const after = await feed();
    expect([after.status, JSON.parse(after.text), after.etag]).toEqual([200, { operations: ACTIVE }, res.etag]);
  });

  it('If-None-Match naming its ETag: 304 with no body and the same ETag; another tag: 200 with the feed', async () => {
    const first = await feed();
    expect(first.status).toBe(200);
    const etag = first.etag!;
    // `cache-control: no-cache` as a revalidating cache sends it: the registry still answers 304.
    for (const ifNoneMatch of [etag, `W/${etag}`, `"0", ${etag}`, '*']) {
      const again = await feed({ ...key('read'), 'if-none-match': ifNoneMatch, 'cache-control': 'no-cache' });
      expect([ifNoneMatch, again.status, again.text, again.etag, again.cacheControl]).toEqual([ifNoneMatch, 304, '', etag, 'no-cache']);
    }
    const stale = await feed({ ...key('read'), 'if-none-match': `"${sha256('stale')}"` });
    expect([stale.status, stale.etag, stale.text]).toEqual([200, etag, first.text]);
  });

  it('a push that changes the feed changes its ETag (an unchanged push does not); retiring changes it back', async () => {
    const before = await feed();
    const pushed = await push({ client: 'web', version: '3.0.0', operations: [USERS] });
    expect(pushed.status).toBe(201);
    const pushedFeed = await feed({ ...key('read'), 'if-none-match': before.etag! });
    expect(pushedFeed.status).toBe(200);
    expect(pushedFeed.etag).not.toBe(before.etag);
    expect(pushedFeed.etag).toBe(`"${sha256(pushedFeed.text)}"`);
    expect(operationsOf(pushedFeed.text)).toEqual([...ACTIVE, { id: USERS.id, body: USERS.body, client: 'web', version: '3.0.0' }]);
    const unchanged = await push({ client: 'web', version: '3.0.0', operations: [USERS] });
    expect([unchanged.status, unchanged.body.unchanged]).toEqual([200, true]);
    expect((await feed({ ...key('read'), 'if-none-match': pushedFeed.etag! })).status).toBe(304);
    expect((await retire({ client: 'web', version: '3.0.0' })).status).toBe(200);
    const retiredFeed = await feed({ ...key('read'), 'if-none-match': pushedFeed.etag! });
    expect([retiredFeed.status, JSON.parse(retiredFeed.text)]).toEqual([200, { operations: ACTIVE }]);
    // The ETag is the feed's content: the same operations again, the same ETag.
    expect(retiredFeed.etag).toBe(before.etag);
  });

  it('any reader: no credentials 401 (a matching ETag too), a key without a registry scope 403; the gateway’s token and reader keys 200', async () => {
    const { etag } = await feed();
    for (const [headers, status, error] of [
      [{}, 401, 'Token required'],
      [{ 'if-none-match': etag! }, 401, 'Token required'],
      [key('none'), 403, 'Forbidden'],
    ] as const) {
      const res = await feed(headers);
      expect([res.status, JSON.parse(res.text)]).toEqual([status, { error }]);
    }
    for (const headers of [await serviceToken('gateway'), key('read'), key('write'), key('ops'), key('ios')]) {
      const res = await feed(headers);
      expect([res.status, res.etag, JSON.parse(res.text)]).toEqual([200, etag, { operations: ACTIVE }]);
    }
  });
});

describe('development: npm start’s developer key pushes any client; loopback without credentials does not', () => {
  let dev: TestService<RegistryService>;
  const developer = generateServiceKey('developer', 'test');
  const asDeveloper = async () => ({
    'x-halo-service-token': await new ServiceIdentity('developer', { signingKey: developer.privateJwk }).singleUseToken('registry'),
  });
  beforeAll(async () => {
    const trusted = { keys: [...JSON.parse(testIdentityEnv('registry').SERVICE_TRUSTED_KEYS!).keys, developer.publicJwk] };
    dev = await startTestService(registryService, {
      AUTH_GRPC_ADDR: auth.grpcAddr,
      HALO_ENV: 'development',
      SERVICE_TRUSTED_KEYS: JSON.stringify(trusted),
    });
  });
  afterAll(async () => dev?.close());
  const list = () => ({ client: 'any', version: '0.1.0', operations: [USERS] });

  it('pushes, recorded as the developer; its token is single-use; no credentials: 401', async () => {
    const anonymous = await call(dev.base, 'POST', '/v1/operations', list());
    expect([anonymous.status, anonymous.body]).toEqual([401, { error: 'Token required' }]);
    const token = await asDeveloper();
    expect((await call(dev.base, 'POST', '/v1/operations', list(), token)).status).toBe(201);
    expect((await call(dev.base, 'GET', '/v1/operations/any/0.1.0')).body.pushedBy).toBe('developer (npm start)');
    const replayed = await call(dev.base, 'POST', '/v1/operations/retire', { client: 'any', version: '0.1.0' }, token);
    expect([replayed.status, replayed.body]).toEqual([401, { error: 'Invalid token' }]);
    expect((await call(dev.base, 'POST', '/v1/operations/retire', { client: 'any', version: '0.1.0' }, await asDeveloper())).status).toBe(
      200,
    );
  });
});
