import { SERVICE_NAMES } from '@halo/kit/launch';
import { findPromtool, metricsFindings, PROMTOOL_MISSING } from '../tools/src/metrics-lint';
import { gql, startE2ESystem } from './helpers';

/**
 * Every `/metrics` endpoint of the running system — the gateway's on its METRICS_PORT, each
 * service's on its HTTP port — passes `promtool check metrics` (Prometheus' linter), after some
 * traffic so that the labelled series exist. Without promtool the same rules run from
 * tools/src/metrics-lint.ts; CI (HALO_REQUIRE_PROMTOOL) must have promtool.
 */
const promtool = findPromtool();
const required = !!process.env.HALO_REQUIRE_PROMTOOL;
if (!promtool && !required) process.stderr.write(`e2e/metrics-lint.test.ts: checked by the exposition rules only, ${PROMTOOL_MISSING}\n`);

let sys: Awaited<ReturnType<typeof startE2ESystem>>;

beforeAll(async () => {
  sys = await startE2ESystem();
  // Traffic through every kind of path: REST proxied, GraphQL across subgraphs, a refusal.
  await fetch(`${sys.url}/hello`);
  await fetch(`${sys.url}/posts/2`);
  await fetch(`${sys.url}/products?page=1&limit=2`);
  await gql(sys.url, '{ posts(first: 2) { id author { name } } products { id } }');
  await gql(sys.url, '{ nope }');
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const endpoints = (): [string, string][] => [
  ['gateway', sys.gatewayMetricsUrl],
  ...SERVICE_NAMES.map((name): [string, string] => [name, `${sys.direct(name)}/metrics`]),
];

it('runs promtool where CI requires it (HALO_REQUIRE_PROMTOOL)', () => {
  if (required && !promtool) throw new Error(`${PROMTOOL_MISSING}; HALO_REQUIRE_PROMTOOL needs it`);
});

it('checks the gateway and every service', () => {
  expect(endpoints().map(([name]) => name)).toEqual(['gateway', ...SERVICE_NAMES]);
  expect(endpoints()).toHaveLength(7);
});

it.each(['gateway', ...SERVICE_NAMES])('%s: /metrics passes the linter', async (name) => {
  const url = endpoints().find(([n]) => n === name)![1];
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toContain('# TYPE nodejs_active_handles gauge');
  expect(metricsFindings(text, promtool)).toEqual([]);
});
