import { startTestService, type TestService } from '@halo/kit/testing';
import { registryService, type RegistryService } from '../src/service';
import { call, contractOf, serviceToken } from './helpers';

/**
 * Usage per client version (docs/registry.md, "Gateway"): what a gateway reports with a
 * `clientVersion` is counted per (operation, client, version), and a refused check names each
 * version as `Name (client version, count)`; a report without one is today's `(client, count)`.
 * `excludeClients` names clients, so it leaves out every version of one.
 */
let reg: TestService<RegistryService>;

const hour = new Date().toISOString();
const report = (client: string, clientVersion: string | undefined, count: number) => ({
  hour,
  client,
  ...(clientVersion === undefined ? {} : { clientVersion }),
  operation: { hash: 'get-products', name: 'GetProducts', body: 'query GetProducts { product(id: 1) { name description } }' },
  coordinates: ['Query', 'Query.product', 'Query.product.id', 'Product', 'Product.name', 'Product.description'],
  count,
});
const sendUsage = async (reports: unknown[]) =>
  call(reg.base, 'POST', '/v1/usage', { gateway: { id: 'gw-versions', composition: 1 }, reports }, await serviceToken('gateway'));

beforeAll(async () => {
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: '127.0.0.1:1' });
  // ios-app 2.3.1 in two lines of one batch and once more in another: one row, 12.
  expect((await sendUsage([report('ios-app', '2.3.1', 5), report('ios-app', '2.3.0', 4), report('ios-app', '2.3.1', 3)])).status).toBe(202);
  expect((await sendUsage([report('ios-app', '2.3.1', 4), report('web', undefined, 3)])).status).toBe(202);
});
afterAll(async () => reg?.close());

/** catalog without Product.description, which GetProducts used. */
const withoutDescription = () => {
  const c = contractOf('catalog');
  c.sdl = c.sdl!.replace(/\n\s*description: String!/, '');
  return c;
};
const check = async (options?: unknown) =>
  (await call(reg.base, 'POST', '/v1/check', { contract: withoutDescription(), options }, await serviceToken('catalog'))).body;

it('stores each version of a client apart, and a report without one as an unknown version', async () => {
  const { rows } = await reg.db.query<{ client: string; client_version: string; count: number }>(
    'SELECT client, client_version, count FROM usage_hourly ORDER BY client, client_version',
  );
  expect(rows).toEqual([
    { client: 'ios-app', client_version: '2.3.0', count: 4 },
    { client: 'ios-app', client_version: '2.3.1', count: 12 },
    { client: 'web', client_version: '', count: 3 },
  ]);
});

it('a refused check names each version apart, as (client version, count), and an unknown one as (client, count)', async () => {
  const res = await check();
  expect(res.ok).toBe(false);
  expect(res.report.changes[0].usage).toEqual({
    count: 19,
    operations: [
      { name: 'GetProducts', hash: 'get-products', client: 'ios-app', clientVersion: '2.3.1', count: 12, lastSeen: expect.any(String) },
      { name: 'GetProducts', hash: 'get-products', client: 'ios-app', clientVersion: '2.3.0', count: 4, lastSeen: expect.any(String) },
      { name: 'GetProducts', hash: 'get-products', client: 'web', clientVersion: null, count: 3, lastSeen: expect.any(String) },
    ],
  });
  expect(res.report.notes).toEqual([
    'Product.description: breaking and used 19 times in the last 7 days by GetProducts (ios-app 2.3.1, 12), GetProducts (ios-app 2.3.0, 4), GetProducts (web, 3)',
  ]);
});

it('excludeClients names a client: every version of it is left out', async () => {
  const res = await check({ excludeClients: ['ios-app'] });
  expect(res.ok).toBe(false);
  expect(res.report.changes[0].usage.count).toBe(3);
  expect(res.report.notes).toEqual([
    'usage of ios-app not counted',
    'Product.description: breaking and used 3 times in the last 7 days by GetProducts (web, 3)',
  ]);
  expect((await check({ excludeClients: ['ios-app', 'web'] })).ok).toBe(true);
  // A version is not a client name.
  expect((await check({ excludeClients: ['ios-app 2.3.1'] })).report.changes[0].usage.count).toBe(19);
});

it('a clientVersion longer than 64 characters, or not a string, is 400 naming it', async () => {
  for (const bad of ['1'.repeat(65), 2]) {
    const res = await sendUsage([{ ...report('ios-app', undefined, 1), clientVersion: bad }]);
    expect([res.status, res.body]).toEqual([400, { error: 'reports.0.clientVersion is invalid' }]);
  }
});
