import { k6Args, sampleOfSummary } from '../src/k6-driver';
import type { LoadTarget } from '../src/gateways-bench';

const target: LoadTarget = {
  id: 'me:halo',
  label: 'Halo',
  url: 'http://127.0.0.1:4200/graphql',
  init: { method: 'POST', body: '{"query":"{ me { id } }"}', headers: { 'content-type': 'application/json' } },
};

/** Reads a flag's value from k6's argument list (`-e NAME=value` pairs). */
const envOf = (args: string[]) =>
  Object.fromEntries(args.flatMap((a, i) => (args[i - 1] === '-e' ? [a.split(/=(.*)/s).slice(0, 2)] : [])) as [string, string][]);

describe('k6 as the bench load generator (src/k6-driver.ts)', () => {
  it('asks for the closed model with one VU per connection, the request and the summary file', () => {
    const args = k6Args(target, { durationS: 15, connections: 20 }, { summary: '/tmp/s.json', headers: '/tmp/h.json' });
    expect(args.slice(0, 2)).toEqual(['run', '--quiet']);
    expect(args).toContain('--no-thresholds');
    expect(args[args.indexOf('--summary-export') + 1]).toBe('/tmp/s.json');
    expect(envOf(args)).toEqual({
      URL: target.url,
      METHOD: 'POST',
      DURATION: '15s',
      GRAPHQL: '1',
      BODY: target.init.body,
      HEADERS_FILE: '/tmp/h.json',
      VUS: '20',
    });
    expect(args.at(-1)).toMatch(/k6\/bench\/target\.js$/);
  });

  it('asks for the open model (a rate, no VU count) and does not check GraphQL bodies of REST reads', () => {
    const rest = { ...target, url: 'http://127.0.0.1:4200/posts/2', init: { method: 'GET' as const } };
    const env = envOf(k6Args(rest, { durationS: 10, rate: 400, maxVus: 300 }, { summary: '/tmp/s.json' }));
    expect(env).toEqual({ URL: rest.url, METHOD: 'GET', DURATION: '10s', GRAPHQL: '0', RATE: '400', MAX_VUS: '300' });
  });

  it('reads requests, rate, latency, failures and dropped iterations from the summary export', () => {
    const sample = sampleOfSummary({
      metrics: {
        http_reqs: { count: 3000, rate: 199.87 },
        http_req_duration: { med: 12.3456, 'p(95)': 40.1, 'p(99)': 81.239, max: 300 },
        http_req_failed: { passes: 2, fails: 2998, value: 0.0007 },
        checks: { passes: 2995, fails: 5, value: 0.998 },
        dropped_iterations: { count: 17, rate: 1.1 },
      },
    });
    expect(sample).toEqual({ rps: 199.87, requests: 3000, errors: 5, p50: 12.35, p95: 40.1, p99: 81.24, dropped: 17 });
  });

  it('counts a run with no requests as no requests, not as an error of the driver', () => {
    expect(sampleOfSummary({ metrics: {} })).toEqual({ rps: 0, requests: 0, errors: 0, p50: NaN, p95: NaN, p99: NaN, dropped: 0 });
  });
});
