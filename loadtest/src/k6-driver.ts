import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cpuOfTarget, cpuPerRequest, type LoadTarget } from './gateways-bench';
import type { Sample } from './rounds';

/**
 * k6 as the load generator of a bench (issue 47): the tool Halo's users bring, so that a figure
 * `npm run bench` publishes can be reproduced by a harness that is not Halo's own. k6 runs
 * `loadtest/k6/bench/target.js` once per measurement, as a child of the bench process (so on the
 * load generator's CPU when the bench is pinned), and its `--summary-export` is read back.
 *
 * Two load models: closed (`connections` VUs, each one connection and one caller, asking again as
 * soon as it is answered — autocannon's model) and open (`rate` requests per second arriving
 * whatever the latency, k6's `constant-arrival-rate`; requests k6 could not start for want of a
 * free VU are counted as `dropped`).
 */
export const K6_SCRIPT = resolve(__dirname, '../k6/bench/target.js');

/** The k6 binary (`K6_BIN`, else `k6` on PATH) and its version, or null when there is none. */
export function findK6(): { bin: string; version: string } | null {
  const bin = process.env.K6_BIN ?? 'k6';
  const r = spawnSync(bin, ['version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return { bin, version: r.stdout.trim().split('\n')[0] ?? 'k6' };
}

export const K6_MISSING =
  'k6 is not installed: build k6 v0.48 or later from its source (loadtest/README.md, "k6 suites") and put it on PATH, or set K6_BIN';

export interface K6Load {
  durationS: number;
  /** Closed model: this many VUs (one connection each). */
  connections?: number;
  /** Open model: requests per second (constant arrival rate). */
  rate?: number;
  /** Open model: VUs k6 may use to keep the rate (default max(50, rate / 2)). */
  maxVus?: number;
}

export interface K6Sample extends Sample {
  /** Open model: iterations k6 had to drop (no free VU): offered but never sent. */
  dropped: number;
  p95: number;
}

interface Summary {
  metrics: Record<string, Record<string, number> | undefined>;
}

/** What k6's `--summary-export` says about the run, as a bench sample (CPU added by the caller). */
export function sampleOfSummary(summary: Summary): Omit<K6Sample, 'cpuUsPerRequest'> {
  const m = (name: string) => summary.metrics[name] ?? {};
  const ms = (v: number | undefined) => (v === undefined ? NaN : Math.round(v * 100) / 100);
  const reqs = m('http_reqs');
  const duration = m('http_req_duration');
  const checks = m('checks');
  const failed = m('http_req_failed');
  return {
    rps: reqs.rate ?? 0,
    requests: reqs.count ?? 0,
    // A request fails its check when it is not a 200 or (GraphQL) carries errors; a request that
    // never got an answer is counted by http_req_failed and also fails its check.
    errors: Math.max(checks.fails ?? 0, failed.passes ?? 0),
    p50: ms(duration.med),
    p95: ms(duration['p(95)']),
    p99: ms(duration['p(99)']),
    dropped: m('dropped_iterations').count ?? 0,
  };
}

/** The k6 arguments of one run (exported for its unit test). */
export function k6Args(t: LoadTarget, load: K6Load, files: { summary: string; headers?: string }): string[] {
  const env: Record<string, string> = {
    URL: t.url,
    METHOD: t.init.method,
    DURATION: `${load.durationS}s`,
    GRAPHQL: t.url.endsWith('/graphql') ? '1' : '0',
    ...(t.init.body ? { BODY: t.init.body } : {}),
    ...(files.headers ? { HEADERS_FILE: files.headers } : {}),
    ...(load.rate ? { RATE: String(load.rate), ...(load.maxVus ? { MAX_VUS: String(load.maxVus) } : {}) } : {}),
    ...(!load.rate ? { VUS: String(load.connections ?? 20) } : {}),
  };
  return [
    'run',
    '--quiet',
    '--no-color',
    '--no-usage-report',
    '--no-thresholds',
    '--summary-export',
    files.summary,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    K6_SCRIPT,
  ];
}

/**
 * A measuring function for the bench (`measure`'s shape): runs k6 against the target and charges
 * the target's process CPU over the run. Per-connection headers (distinct callers) and the
 * target's own headers go to a file in `workDir`, one per target.
 */
export function k6Driver(bin: string, workDir: string) {
  return async function measureWithK6(
    t: LoadTarget,
    connections: number,
    durationS: number,
    open?: { rate: number; maxVus?: number },
  ): Promise<K6Sample> {
    const base = t.init.headers ?? {};
    const perVu = t.perConnection?.length ? t.perConnection.map((h) => ({ ...base, ...h })) : [base];
    const safe = t.id.replace(/[^a-z0-9-]+/gi, '_');
    const headers = join(workDir, `k6-headers-${safe}.json`);
    writeFileSync(headers, JSON.stringify(perVu));
    const summary = join(workDir, `k6-summary-${safe}.json`);
    const before = cpuOfTarget(t);
    await runK6(bin, k6Args(t, { durationS, connections, ...open }, { summary, headers }));
    const sample = sampleOfSummary(JSON.parse(readFileSync(summary, 'utf8')) as Summary);
    return { ...sample, ...cpuPerRequest(t, before, sample.requests) };
  };
}

function runK6(bin: string, args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    child.once('error', fail);
    child.once('exit', (code) =>
      code === 0 ? done() : fail(new Error(`k6 ${args.slice(-1)[0]} exited ${code}: ${stderr.trim().slice(-1500)}`)),
    );
  });
}
