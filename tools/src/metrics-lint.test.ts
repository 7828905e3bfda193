import { createMetrics } from '@halo/kit/metrics';
import { expositionFindings, findPromtool, metricsFindings, PROMTOOL_MISSING, promtoolFindings } from './metrics-lint';

/**
 * The exposition rules (used where promtool is missing) refuse what `promtool check metrics`
 * refuses, and a process registry of the kit passes both. Where promtool is installed, each bad
 * exposition is also put to promtool, so the rules here cannot drift from it unnoticed.
 */
const promtool = findPromtool();
if (!promtool) process.stderr.write(`tools/src/metrics-lint.test.ts: promtool cases skipped, ${PROMTOOL_MISSING}\n`);

const family = (type: string, name: string, help = 'what it counts') =>
  `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}{service="x"} 1\n`;

describe('exposition rules', () => {
  it('accept a well-named counter, gauge and histogram', () => {
    const text =
      family('counter', 'halo_things_total') +
      family('gauge', 'halo_things_in_flight') +
      '# HELP halo_wait_seconds waits\n# TYPE halo_wait_seconds histogram\nhalo_wait_seconds_bucket{le="+Inf"} 1\nhalo_wait_seconds_sum 0.1\nhalo_wait_seconds_count 1\n';
    expect(expositionFindings(text)).toEqual([]);
  });

  const bad: [string, string, RegExp][] = [
    ['a gauge named _total', family('gauge', 'nodejs_active_handles_total'), /non-counter metrics should not have "_total" suffix/],
    ['a counter without _total', family('counter', 'halo_things'), /counter metrics should have "_total" suffix/],
    ['no help text', '# TYPE halo_things_total counter\nhalo_things_total 1\n', /no help text/],
    ['a sample with no TYPE', 'halo_things_total 1\n', /sample without a TYPE line/],
    ['a gauge named _count', family('gauge', 'halo_things_count'), /should not have "_count" suffix/],
    ['milliseconds', family('gauge', 'halo_wait_milliseconds'), /base units/],
    ['an abbreviated unit', family('gauge', 'halo_wait_ms'), /abbreviated units/],
    ['camelCase', family('gauge', 'halo_waitTime_seconds'), /snake_case/],
  ];

  it.each(bad)('refuse %s', (_what, text, finding) => {
    expect(expositionFindings(text).join('\n')).toMatch(finding);
  });

  (promtool ? it.each(bad) : it.skip.each(bad))('promtool refuses %s too', (_what, text) => {
    expect(promtoolFindings(promtool as string, text)).not.toEqual([]);
  });
});

describe("the kit's process registry", () => {
  it('passes promtool (where installed) and the exposition rules', async () => {
    const metrics = createMetrics('probe');
    metrics.counter('halo_probe_things_total', 'things', ['kind']).inc({ kind: 'a' });
    metrics.gauge('halo_probe_level', 'a level', []).set(2);
    const text = await metrics.registry.metrics();
    expect(text).toContain('nodejs_active_handles{');
    expect(expositionFindings(text)).toEqual([]);
    expect(metricsFindings(text, promtool)).toEqual([]);
  });
});
