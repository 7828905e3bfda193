import { startTestService, type TestService } from '@halo/kit/testing';
import { bearer, post, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { call, catalogWith, contractOf, serviceToken } from './helpers';

/**
 * What a reader (the Studio, a `schema:read` key) sees (docs/registry.md, "Registry HTTP API"):
 * every check, publish and rollback recorded with what blocked it, and usage per coordinate, per
 * hour and client, per operation and per client version. Real Postgres, a real auth for the keys.
 */
let auth: TestSystem;
let reg: TestService<RegistryService>;
let readKey: string;
let writeKey: string;
let otherKey: string;

const HOUR_MS = 3_600_000;
const h0 = new Date(Math.floor(Date.now() / HOUR_MS) * HOUR_MS);
const hoursAgo = (n: number) => new Date(h0.getTime() - n * HOUR_MS).toISOString();
const PAGE = ['Query', 'Query.product', 'Query.product.id', 'Product', 'Product.name', 'Product.description'];
const LIST = ['Query', 'Query.products', 'Product', 'Product.name'];
/** With `costEach`, the gateway's estimated cost of each request (a gateway from before costs sends none). */
const report = (
  hour: string,
  client: string,
  clientVersion: string | undefined,
  op: 'page' | 'list',
  count: number,
  costEach?: number,
) => ({
  hour,
  client,
  ...(clientVersion === undefined ? {} : { clientVersion }),
  operation:
    op === 'page'
      ? { hash: 'op-page', name: 'ProductPage', body: 'query ProductPage { product(id: 1) { name description } }' }
      : { hash: 'op-list', name: 'Listing', body: 'query Listing { products { name } }' },
  coordinates: op === 'page' ? PAGE : LIST,
  count,
  ...(costEach === undefined ? {} : { cost: { sum: costEach * count, requests: count } }),
});

const as = {
  catalog: () => serviceToken('catalog'),
  reader: async () => ({ 'x-api-key': readKey }),
};
const get = async (path: string, headers?: Record<string, string>) =>
  call(reg.base, 'GET', path, undefined, headers ?? (await as.reader()));

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const key = async (scopes: string[]) =>
    (await post(auth.base, '/auth/api-keys', { name: 'studio', scopes }, bearer(admin.token))).body.data.key as string;
  readKey = await key(['schema:read']);
  writeKey = await key(['schema:write']);
  otherKey = await key(['catalog:write']);
  // A check older than the usage kept: the first usage report prunes it with old usage.
  await reg.db.query(
    `INSERT INTO checks (service, kind, author, ok, outcome, report, created_at)
     VALUES ('catalog', 'check', 'test', true, 'passed', '{}', now() - interval '31 days')`,
  );
  const reports = [
    report(hoursAgo(0), 'ios-app', '2.3.1', 'page', 5, 3),
    report(hoursAgo(2), 'ios-app', '2.3.1', 'page', 3, 3),
    report(hoursAgo(0), 'ios-app', '2.3.0', 'page', 1, 3),
    report(hoursAgo(0), 'web', undefined, 'page', 4, 3),
    report(hoursAgo(1), 'web', undefined, 'list', 8, 12),
    // The same hour, operation and client from a gateway that reports no cost: counted, not costed.
    report(hoursAgo(1), 'web', undefined, 'list', 12),
    // Outside a one-day window, inside the default seven.
    report(hoursAgo(72), 'kiosk', '1.0', 'page', 100),
    // Outside the default seven, inside the 30 kept: an operation no gateway costed.
    {
      ...report(hoursAgo(240), 'kiosk', '1.0', 'list', 1),
      operation: { hash: 'op-ping', name: 'Ping', body: '{ __typename }' },
      coordinates: ['Query'],
    },
  ];
  const sent = await call(reg.base, 'POST', '/v1/usage', { gateway: { id: 'gw', composition: 1 }, reports }, await serviceToken('gateway'));
  expect(sent.status).toBe(202);
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

/** catalog without Product.description, which ProductPage uses. */
const withoutDescription = () => {
  const c = contractOf('catalog');
  c.sdl = c.sdl!.replace(/\n\s*description: String!/, '');
  return c;
};

describe('checks are recorded', () => {
  it('old checks are pruned with old usage', async () => {
    const { rows } = await reg.db.query("SELECT id FROM checks WHERE created_at < now() - interval '30 days'");
    expect(rows).toEqual([]);
  });

  it('a refused check: its outcome, author, changes with the usage that blocks them, and notes', async () => {
    const res = await call(reg.base, 'POST', '/v1/check', { contract: withoutDescription() }, await as.catalog());
    expect(res.body.ok).toBe(false);
    const [latest] = (await get('/v1/checks')).body.checks;
    expect(latest).toMatchObject({
      id: expect.any(Number),
      service: 'catalog',
      kind: 'check',
      author: 'service:catalog',
      ok: false,
      outcome: 'refused',
      version: null,
      acknowledgement: null,
      createdAt: expect.any(String),
      errors: { composition: [], rest: [] },
      notes: [expect.stringMatching(/^Product\.description: breaking and used 113 times .* by ProductPage \(kiosk 1\.0, 100\)/)],
    });
    expect(latest.changes).toEqual([
      expect.objectContaining({ type: 'FIELD_REMOVED', path: 'Product.description', breaking: true, acknowledged: false }),
    ]);
    expect(latest.changes[0].usage.operations).toEqual([
      { name: 'ProductPage', hash: 'op-page', client: 'kiosk', clientVersion: '1.0', count: 100, lastSeen: expect.any(String) },
      { name: 'ProductPage', hash: 'op-page', client: 'ios-app', clientVersion: '2.3.1', count: 8, lastSeen: expect.any(String) },
      { name: 'ProductPage', hash: 'op-page', client: 'web', clientVersion: null, count: 4, lastSeen: expect.any(String) },
      { name: 'ProductPage', hash: 'op-page', client: 'ios-app', clientVersion: '2.3.0', count: 1, lastSeen: expect.any(String) },
    ]);
  });

  it('a refused publish (422) with the composer’s errors, a published one with its version, an unchanged one', async () => {
    const broken = contractOf('catalog');
    broken.sdl = `${broken.sdl}\nextend type Query { user(id: ID!): Int }`;
    expect((await call(reg.base, 'POST', '/v1/publish', { contract: broken }, await as.catalog())).status).toBe(422);
    const contract = catalogWith('sku: String');
    const published = await call(reg.base, 'POST', '/v1/publish', { contract, acknowledge: 'nothing breaks' }, { 'x-api-key': writeKey });
    expect(published.status).toBe(201);
    expect((await call(reg.base, 'POST', '/v1/publish', { contract }, await as.catalog())).status).toBe(200);
    const [unchanged, made, refused] = (await get('/v1/checks?service=catalog')).body.checks;
    expect(refused).toMatchObject({ kind: 'publish', outcome: 'refused', ok: false, version: null, changes: [] });
    expect(refused.errors.composition.join('\n')).toMatch(/user/);
    expect(made).toMatchObject({
      kind: 'publish',
      outcome: 'published',
      ok: true,
      version: published.body.version,
      author: expect.stringMatching(/^admin:Root/),
      acknowledgement: 'nothing breaks',
      changes: [expect.objectContaining({ path: 'Product.sku', breaking: false })],
    });
    expect(unchanged).toMatchObject({ kind: 'publish', outcome: 'unchanged', ok: true, version: published.body.version, changes: [] });
  });

  it('a refused rollback is recorded as one; requests refused before a check (400, 403, 404) are not', async () => {
    const before = (await get('/v1/checks?limit=200')).body.checks.length;
    expect(
      (await call(reg.base, 'POST', '/v1/publish', { contract: { ...contractOf('catalog'), url: 'x' } }, await as.catalog())).status,
    ).toBe(400);
    expect((await call(reg.base, 'POST', '/v1/check', { contract: contractOf('payments') }, await as.catalog())).status).toBe(403);
    expect((await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 99 }, await as.catalog())).status).toBe(404);
    expect((await get('/v1/checks?limit=200')).body.checks).toHaveLength(before);
    // v1 → v2 added sku; rolling back to v1 removes it, which nobody used: it goes through.
    expect((await call(reg.base, 'POST', '/v1/publish', { contract: withoutDescription() }, await as.catalog())).status).toBe(422);
    const [refusedPublish] = (await get('/v1/checks?limit=1')).body.checks;
    expect(refusedPublish).toMatchObject({ kind: 'publish', outcome: 'refused' });
    const rollback = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 1 }, await as.catalog());
    expect(rollback.status).toBe(201);
    const [latest] = (await get('/v1/checks?limit=1')).body.checks;
    expect(latest).toMatchObject({ kind: 'rollback', outcome: 'published', version: rollback.body.version });
  });

  it('one check whole by id, its report as answered; 404 when absent, 400 when not a number', async () => {
    const [latest] = (await get('/v1/checks?limit=1')).body.checks;
    const one = await get(`/v1/checks/${latest.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ ...latest, report: expect.objectContaining({ service: 'catalog', options: expect.any(Object) }) });
    expect(one.body.report.changes).toEqual(latest.changes);
    expect(await get('/v1/checks/999999')).toMatchObject({ status: 404, body: { error: 'No check 999999' } });
    expect(await get('/v1/checks/abc')).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^id must be a whole number/) },
    });
  });

  it('filters by service, newest first, and bounds the limit', async () => {
    await call(reg.base, 'POST', '/v1/check', { contract: contractOf('content') }, await serviceToken('content'));
    const content = (await get('/v1/checks?service=content')).body.checks;
    expect(content.map((c: any) => [c.service, c.kind, c.outcome])).toEqual([['content', 'check', 'passed']]);
    const all = (await get('/v1/checks')).body.checks;
    expect(all[0].service).toBe('content');
    expect(all.map((c: any) => c.id)).toEqual([...all.map((c: any) => c.id)].sort((a, b) => b - a));
    expect((await get('/v1/checks?limit=2')).body.checks).toHaveLength(2);
    for (const limit of ['0', '201', 'x']) {
      expect(await get(`/v1/checks?limit=${limit}`)).toMatchObject({
        status: 400,
        body: { error: 'limit must be a whole number from 1 to 200' },
      });
    }
  });
});

describe('usage', () => {
  it('requests per coordinate in the window, with the number of clients', async () => {
    const week = (await get('/v1/usage/coordinates')).body;
    expect(Date.parse(week.since)).toBeLessThan(Date.now() - 7 * 24 * HOUR_MS + 60_000);
    const of = (body: any, c: string) => body.coordinates.find((x: any) => x.coordinate === c);
    expect(of(week, 'Product.description')).toEqual({ coordinate: 'Product.description', count: 113, clients: 3 });
    expect(of(week, 'Product.name')).toEqual({ coordinate: 'Product.name', count: 133, clients: 3 });
    expect(week.coordinates[0]).toEqual({ coordinate: 'Product', count: 133, clients: 3 });
    const day = (await get('/v1/usage/coordinates?days=1')).body;
    expect(of(day, 'Product.description')).toEqual({ coordinate: 'Product.description', count: 13, clients: 2 });
    expect(of(day, 'Query.products')).toEqual({ coordinate: 'Query.products', count: 20, clients: 1 });
  });

  it('a coordinate per hour by client version, zero-filled, and the operations that used it', async () => {
    const res = await get('/v1/usage/series?coordinate=Product.description&days=1');
    expect(res.status).toBe(200);
    const { coordinate, hours, series, operations } = res.body;
    expect(coordinate).toBe('Product.description');
    expect(hours).toHaveLength(24);
    expect(hours.at(-1)).toBe(h0.toISOString());
    const zeros = (at: Record<number, number>) => hours.map((_: string, i: number) => at[i] ?? 0);
    expect(series).toEqual([
      { client: 'ios-app', clientVersion: '2.3.1', counts: zeros({ 21: 3, 23: 5 }) },
      { client: 'web', clientVersion: null, counts: zeros({ 23: 4 }) },
      { client: 'ios-app', clientVersion: '2.3.0', counts: zeros({ 23: 1 }) },
    ]);
    expect(operations.map((o: any) => [o.name, o.client, o.clientVersion, o.count])).toEqual([
      ['ProductPage', 'ios-app', '2.3.1', 8],
      ['ProductPage', 'web', null, 4],
      ['ProductPage', 'ios-app', '2.3.0', 1],
    ]);
    // An argument and an unused field: an empty series over the same hours.
    expect((await get('/v1/usage/series?coordinate=Query.product.id&days=1')).body.series).toHaveLength(3);
    const unused = (await get('/v1/usage/series?coordinate=Product.price')).body;
    expect([unused.hours.length >= 7 * 24, unused.series, unused.operations]).toEqual([true, [], []]);
  });

  it('the busiest operations, with their clients, body and number of coordinates', async () => {
    const { operations } = (await get('/v1/usage/operations')).body;
    expect(operations).toEqual([
      {
        name: 'ProductPage',
        hash: 'op-page',
        body: 'query ProductPage { product(id: 1) { name description } }',
        clients: ['kiosk', 'ios-app', 'web'],
        count: 113,
        // 13 of the 113 requests were costed, 3 each: the mean is of those, "in all" is for every request.
        cost: { perRequest: 3, total: 339 },
        lastSeen: expect.any(String),
        coordinates: PAGE.length,
      },
      expect.objectContaining({ name: 'Listing', hash: 'op-list', clients: ['web'], count: 20, coordinates: LIST.length }),
    ]);
    expect((await get('/v1/usage/operations?limit=1&days=1')).body.operations.map((o: any) => [o.name, o.count])).toEqual([
      ['Listing', 20],
    ]);
  });

  it('the top operations by estimated cost per request, or in all; an operation nobody costed comes last', async () => {
    const top = async (query: string) =>
      (await get(`/v1/usage/operations?${query}`)).body.operations.map((o: any) => [o.name, o.count, o.cost]);
    expect(await top('by=cost')).toEqual([
      ['Listing', 20, { perRequest: 12, total: 240 }],
      ['ProductPage', 113, { perRequest: 3, total: 339 }],
    ]);
    expect(await top('by=totalCost')).toEqual([
      ['ProductPage', 113, { perRequest: 3, total: 339 }],
      ['Listing', 20, { perRequest: 12, total: 240 }],
    ]);
    expect(await top('by=cost&days=30')).toEqual([
      ['Listing', 20, { perRequest: 12, total: 240 }],
      ['ProductPage', 113, { perRequest: 3, total: 339 }],
      ['Ping', 1, null],
    ]);
    expect((await get('/v1/usage/operations?by=newest')).body).toEqual({ error: 'by must be one of requests, cost, totalCost' });
  });

  it('400 for a usage report whose costed requests exceed its count; nothing of the batch is stored', async () => {
    const before = (await get('/v1/usage/operations?by=requests')).body.operations;
    const reports = [
      report(hoursAgo(0), 'web', undefined, 'list', 2, 5),
      { ...report(hoursAgo(0), 'web', undefined, 'list', 2), cost: { sum: 10, requests: 3 } },
    ];
    const sent = await call(
      reg.base,
      'POST',
      '/v1/usage',
      { gateway: { id: 'gw', composition: 1 }, reports },
      await serviceToken('gateway'),
    );
    expect([sent.status, sent.body]).toEqual([400, { error: 'reports.1.cost.requests is invalid' }]);
    expect((await get('/v1/usage/operations?by=requests')).body.operations).toEqual(before);
  });

  it('every client version seen, an undeclared one as null', async () => {
    const { clients } = (await get('/v1/usage/clients')).body;
    expect(clients.map((c: any) => [c.client, c.clientVersion, c.count])).toEqual([
      ['kiosk', '1.0', 100],
      ['web', null, 24],
      ['ios-app', '2.3.1', 8],
      ['ios-app', '2.3.0', 1],
    ]);
    expect(clients[0].lastSeen).toEqual(expect.any(String));
  });

  it('400 for a malformed coordinate or a window outside 1 to the retention', async () => {
    for (const c of ['Product..name', 'A.b.c.d', '1Type', 'Product.name%20', 'Product.']) {
      const res = await get(`/v1/usage/series?coordinate=${c}`);
      expect([c, res.status, res.body.error]).toEqual([
        c,
        400,
        expect.stringMatching(/^coordinate must be Type, Type\.field, Type\.field\.arg or Enum\.VALUE, not "/),
      ]);
    }
    expect((await get('/v1/usage/series')).body).toEqual({
      error: 'coordinate is required (Type, Type.field, Type.field.arg or Enum.VALUE)',
    });
    for (const path of ['/v1/usage/coordinates', '/v1/usage/series?coordinate=Product&', '/v1/usage/operations', '/v1/usage/clients']) {
      for (const days of ['0', '31', 'x', '-1']) {
        const res = await get(`${path}${path.includes('?') ? '' : '?'}days=${days}`);
        expect([path, days, res.status, res.body.error]).toEqual([path, days, 400, 'days must be a whole number of days from 1 to 30']);
      }
    }
    expect((await get('/v1/usage/coordinates?days=30')).status).toBe(200);
    expect((await get('/v1/usage/series?coordinate=ProductSort.PRICE')).status).toBe(200);
  });
});

describe('who may read', () => {
  const GETS = [
    '/v1/checks',
    '/v1/checks/1',
    '/v1/usage/coordinates',
    '/v1/usage/series?coordinate=Product.name',
    '/v1/usage/operations',
    '/v1/usage/clients',
    '/v1/services',
    '/v1/services/catalog/versions',
    '/v1/services/catalog/versions/1',
    '/v1/services/catalog/diff?from=1&to=2',
    '/v1/gateways',
    '/v1/supergraph',
  ];

  it('a schema:read key reads every GET, and may not check, publish or roll back (403)', async () => {
    const [first] = (await get('/v1/checks?limit=200')).body.checks.slice(-1);
    for (const path of GETS.map((p) => p.replace('/v1/checks/1', `/v1/checks/${first.id}`))) {
      expect([path, (await get(path)).status]).toEqual([path, 200]);
    }
    for (const [path, body] of [
      ['/v1/check', { contract: catalogWith('readerField: String') }],
      ['/v1/publish', { contract: catalogWith('readerField: String') }],
      ['/v1/rollback', { service: 'catalog', to: 1 }],
    ] as const) {
      const res = await call(reg.base, 'POST', path, body, await as.reader());
      expect([path, res.status, res.body]).toEqual([path, 403, { error: 'Forbidden' }]);
    }
    expect(
      (await call(reg.base, 'POST', '/v1/usage', { gateway: { id: 'x', composition: 1 }, reports: [] }, await as.reader())).status,
    ).toBe(403);
  });

  it('a key without a schema scope: 403 on every GET; no credentials (not development): 401', async () => {
    for (const path of GETS) {
      const res = await get(path, { 'x-api-key': otherKey });
      expect([path, res.status, res.body]).toEqual([path, 403, { error: 'Forbidden' }]);
      const none = await call(reg.base, 'GET', path);
      expect([path, none.status, none.body]).toEqual([path, 401, { error: 'Token required' }]);
    }
  });

  it('the domain answers the Studio directly, with the same rules', async () => {
    const registry = reg.service.domain.registry;
    expect((await registry.checks({ service: 'content' })).map((c) => c.outcome)).toEqual(['passed']);
    expect((await registry.usageSeries('Product.description', 1)).series).toHaveLength(3);
    expect((await registry.topOperations(7, 1)).map((o) => o.hash)).toEqual(['op-page']);
    expect((await registry.usageClients(1)).map((c) => c.client)).toEqual(['web', 'ios-app', 'ios-app']);
    expect((await registry.usageByCoordinate()).coordinates.length).toBeGreaterThan(0);
    await expect(registry.usageSeries('not a coordinate')).rejects.toMatchObject({ kind: 'BAD_REQUEST' });
    await expect(registry.checkById(0)).rejects.toMatchObject({ kind: 'BAD_REQUEST' });
  });
});
