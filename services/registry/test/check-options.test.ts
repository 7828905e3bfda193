import { createLogger } from '@halo/kit/logging';
import { startTestService, TEST_SERVICE_ENV, testIdentityEnv, type TestService } from '@halo/kit/testing';
import { registryService, type RegistryService } from '../src/service';
import { call, contractOf, serviceToken } from './helpers';

/**
 * The check's options (docs/registry.md "Check options"): usage of some clients left out, a
 * threshold as a share of all requests in the window, the window itself; what the registry
 * defaults to, echoed in the report; 400 naming a bad one. Service tokens only: no auth needed.
 */
let reg: TestService<RegistryService>;

beforeAll(async () => {
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: '127.0.0.1:1' });
  const hour = new Date().toISOString();
  const report = (client: string, name: string, coordinates: string[], count: number) => ({
    hour,
    client,
    operation: { hash: `${name}-${client}`, name, body: `query ${name} { products { data { id } } }` },
    coordinates,
    count,
  });
  const page = ['Query', 'Query.product', 'Product', 'Product.name', 'Product.description'];
  const listing = ['Query', 'Query.products', 'Product', 'Product.id'];
  const reports = [report('web', 'ProductPage', page, 7), report('ios', 'ProductPage', page, 5), report('web', 'Listing', listing, 88)];
  const sent = await call(
    reg.base,
    'POST',
    '/v1/usage',
    { gateway: { id: 'gw-1', composition: 1 }, reports },
    await serviceToken('gateway'),
  );
  expect(sent.status).toBe(202);
});
afterAll(async () => reg?.close());

/** catalog without Product.description, which ProductPage used 12 times (web 7, ios 5) of 100 requests. */
const withoutDescription = () => {
  const c = contractOf('catalog');
  c.sdl = c.sdl!.replace(/\n\s*description: String!/, '');
  return c;
};
const check = async (options: unknown) =>
  (await call(reg.base, 'POST', '/v1/check', { contract: withoutDescription(), options }, await serviceToken('catalog'))).body;

it('by default any use in 7 days blocks, and the report says which options it ran with', async () => {
  const res = await check(undefined);
  expect(res.report.options).toEqual({ windowDays: 7, thresholdPercent: 0, excludeClients: [] });
  expect(res.ok).toBe(false);
  expect(res.report.changes[0].usage.count).toBe(12);
});

it('excluded clients: their usage does not count', async () => {
  const neither = await check({ excludeClients: ['web', 'ios'] });
  expect(neither.ok).toBe(true);
  expect(neither.report.notes).toEqual(['usage of web, ios not counted', 'Product.description: breaking, but unused in the last 7 days']);
  const iosOnly = await check({ excludeClients: ['web'] });
  expect(iosOnly.ok).toBe(false);
  expect(iosOnly.report.changes[0].usage.count).toBe(5);
});

it('a threshold: a use at most that share of all requests in the window passes, with a note; above it blocks', async () => {
  const under = await check({ thresholdPercent: 20 });
  expect(under.ok).toBe(true);
  expect(under.report.notes).toEqual([
    'Product.description: breaking, used 12 times in the last 7 days (12.00 % of requests), within the threshold of 20 %',
  ]);
  expect((await check({ thresholdPercent: 10 })).ok).toBe(false);
});

it('a window of its own, and 400 naming a bad option', async () => {
  expect((await check({ windowDays: 1 })).report.options.windowDays).toBe(1);
  for (const [bad, message] of [
    [{ windowDays: 0 }, 'options.windowDays must be a whole number of days from 1 to 30 (the usage kept)'],
    [{ thresholdPercent: 101 }, 'options.thresholdPercent must be a number from 0 to 100'],
    [{ excludeClients: 'web' }, 'options.excludeClients must be a list of at most 50 client names (1 to 64 characters)'],
    [{ since: 3 }, 'options.since is not an option (windowDays, thresholdPercent, excludeClients)'],
  ] as const) {
    const res = await call(reg.base, 'POST', '/v1/check', { contract: withoutDescription(), options: bad }, await serviceToken('catalog'));
    expect([res.status, res.body]).toEqual([400, { error: message }]);
  }
});

it('the registry’s own defaults (REGISTRY_CHECK_THRESHOLD_PERCENT, REGISTRY_CHECK_EXCLUDE_CLIENTS) apply when a check names none', async () => {
  // A second registry on the same database (the usage above), configured otherwise.
  const config = registryService.loadConfig({
    ...TEST_SERVICE_ENV,
    ...testIdentityEnv('registry'),
    AUTH_GRPC_ADDR: '127.0.0.1:1',
    REGISTRY_CHECK_THRESHOLD_PERCENT: '15',
    REGISTRY_CHECK_EXCLUDE_CLIENTS: 'ios, k6',
  });
  const other = await registryService.start(config, createLogger('registry', 'silent'), { db: reg.db });
  try {
    const base = `http://127.0.0.1:${other.httpPort}`;
    const res = (await call(base, 'POST', '/v1/check', { contract: withoutDescription() }, await serviceToken('catalog'))).body;
    expect(res.report.options).toEqual({ windowDays: 7, thresholdPercent: 15, excludeClients: ['ios', 'k6'] });
    // web's 7 of the 95 requests that count: 7.37 %, within 15 %.
    expect(res.report.changes[0].usage.count).toBe(7);
    expect(res.ok).toBe(true);
  } finally {
    await other.stop();
  }
});
