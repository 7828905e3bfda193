import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { signAccessToken } from '@halo/kit/auth';
import type { RunningSystem } from '@halo/tools';
import { startBenchSystem } from './bench-system';
import { mergeSection } from './benchmarks-doc';
import { callerAuthEnv, ensureOrders, registerCallers } from './callers';
import { gqlInit, QUERIES, REST_PATHS, startPeers, type LoadTarget, type Peers } from './gateways-bench';
import { findK6, K6_MISSING, k6Driver, type K6Sample } from './k6-driver';
import { lineChartSvg } from './plot';

/**
 * `npm run bench:curves` (issue 47, loadtest/README.md): latency against offered load, the curve a
 * platform team sizes with. An open model — k6's `constant-arrival-rate`: requests arrive at a
 * set rate whatever the answers' latency, as users' requests do — from `BENCH_LEVELS` (25 % …
 * 110 %) of Halo's own saturation for each row, through Halo and its peers on the same running
 * subgraphs (the servers of `npm run bench`, pinned the same way). Saturation is Halo's
 * throughput with `BENCH_CONNECTIONS` closed-loop connections (k6, as the bench's S1 rows).
 *
 * At each level every target is loaded for `BENCH_DURATION` seconds, the targets back to back in an
 * order rotated per level; recorded: achieved req/s, p50, p95, p99, failed requests (no answer
 * within 10 s counts), iterations k6 dropped for want of a free VU (offered but never sent) and
 * the target process's CPU per request. The knee of a curve: the first level whose p99 is over
 * three times the p99 at the lowest level, or which fails or drops more than 1 % of what was
 * offered. Writes loadtest/results/curves.{json,md}, one SVG per row in docs/benchmarks/, and its
 * section of docs/benchmarks.md.
 */
const ROOT = resolve(__dirname, '../..');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const CALLERS = Number(process.env.BENCH_CALLERS ?? 100);
const LEVELS = (process.env.BENCH_LEVELS ?? '0.25,0.5,0.75,0.9,1,1.1').split(',').map(Number);
const ROWS = (process.env.BENCH_ROWS ?? 'me,nested,rest-post').split(',').map((s) => s.trim());
const WARMUP_S = Number(process.env.BENCH_WARMUP ?? 5);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 400);
const MAX_VUS = Number(process.env.BENCH_MAX_VUS ?? 400);
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs/curves');
const DOC = resolve(ROOT, 'docs/benchmarks.md');
const PLOTS = resolve(ROOT, 'docs/benchmarks');
const JWT_SECRET = randomBytes(32).toString('base64url');
const KNOBS = [
  'BENCH_ROWS',
  'BENCH_LEVELS',
  'BENCH_DURATION',
  'BENCH_CONNECTIONS',
  'BENCH_CALLERS',
  'BENCH_WARMUP',
  'BENCH_MAX_VUS',
  'BENCH_PORT_OFFSET',
];
const COMMAND = [...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`), 'npm run bench:curves'].join(' ');
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Row {
  id: string;
  title: string;
  targets: LoadTarget[];
}

interface Point extends K6Sample {
  target: string;
  level: number;
  offered: number;
}

/** The rows: each a request and the gateways (or proxies) that answer it. */
function rows(system: RunningSystem, peers: Peers, perConnection: Record<string, string>[]): Row[] {
  const gw = system.processes.find((p) => p.name === 'gateway')!;
  const g = peers.graphql!;
  const graphql = (id: string, query: keyof typeof QUERIES, title: string): Row => ({
    id,
    title,
    targets: [
      { id: 'Halo', url: gw.url, pid: gw.child.pid! },
      { id: 'Hive Gateway', url: g.hive.url, pid: g.hive.child.pid! },
      { id: 'Hive Gateway + Rust planner', url: g.hiveRust.url, pid: g.hiveRust.child.pid! },
      { id: 'plain Apollo', url: g.apollo.url, pid: g.apollo.child.pid! },
    ].map((t) => ({ id: t.id, label: t.id, url: `${t.url}/graphql`, init: gqlInit(QUERIES[query]), perConnection, cpuPid: t.pid })),
  });
  const content = system.processes.find((p) => p.name === 'content' && !p.replica)!;
  const all: Row[] = [
    graphql('me', 'me', '`me { orders { id product { name price } user { name } } }`, distinct callers'),
    graphql('nested', 'nested', 'nested `users { posts { author comments { author } } }`, distinct signed-in callers'),
    {
      id: 'rest-post',
      title: `REST \`GET ${REST_PATHS.post}\``,
      targets: [
        { id: 'Halo', label: 'through Halo', url: `${gw.url}${REST_PATHS.post}`, init: { method: 'GET' }, cpuPid: gw.child.pid! },
        ...(peers.nginx
          ? [
              {
                id: 'nginx',
                label: 'through nginx (1 worker)',
                url: `${peers.nginx.url}${REST_PATHS.post}`,
                init: { method: 'GET' as const },
                cpuPid: peers.nginx.workerPid(),
              },
            ]
          : []),
        {
          id: 'direct',
          label: 'direct to content',
          url: `${content.url}${REST_PATHS.post}`,
          init: { method: 'GET' },
          cpuPid: content.child.pid!,
        },
      ],
    },
  ];
  const unknown = ROWS.filter((r) => !all.some((a) => a.id === r));
  if (unknown.length) throw new Error(`BENCH_ROWS: no such row ${unknown.join(', ')} (${all.map((a) => a.id).join(', ')})`);
  return all.filter((r) => ROWS.includes(r.id));
}

/** The first level whose p99 is over 3× the lowest level's, or that fails or drops > 1 % of its offered requests. */
export function kneeOf(points: readonly Point[]): Point | undefined {
  const sorted = [...points].sort((a, b) => a.level - b.level);
  const base = sorted[0]?.p99 ?? NaN;
  return sorted.find((p) => p.p99 > 3 * base || (p.errors + p.dropped) / (p.offered * DURATION_S) > 0.01);
}

const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '—');

function renderRow(row: Row, saturation: number, points: Point[], plot: string): string {
  const lines = [
    `### ${row.title}`,
    '',
    `Halo's saturation (closed loop, ${CONNECTIONS} connections): **${Math.round(saturation)} req/s**. ![p99 against offered load](${plot})`,
    '',
    "| target | offered req/s (% of Halo's saturation) | achieved req/s | p50 ms | p95 ms | p99 ms | failed | dropped | CPU µs/req |",
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const t of row.targets) {
    for (const p of points.filter((q) => q.target === t.id)) {
      lines.push(
        `| ${t.label} | ${Math.round(p.offered)} (${Math.round(p.level * 100)} %) | ${Math.round(p.rps)} | ${fmt(p.p50)} | ${fmt(p.p95)} | ${fmt(p.p99)} | ${p.errors} | ${p.dropped} | ${fmt(p.cpuUsPerRequest ?? NaN, 0)} |`,
      );
    }
  }
  lines.push('', 'Knee (first level with p99 > 3× its lowest-level p99, or > 1 % failed or dropped):', '');
  for (const t of row.targets) {
    const knee = kneeOf(points.filter((p) => p.target === t.id));
    lines.push(
      `- ${t.label}: ${knee ? `${Math.round(knee.offered)} req/s (${Math.round(knee.level * 100)} % of Halo's saturation)` : 'none within the levels measured'}`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  const k6 = findK6();
  if (!k6) throw new Error(K6_MISSING);
  const started = new Date();
  const bench = await startBenchSystem({
    name: 'curves',
    portOffset: PORT_OFFSET,
    jwtSecret: JWT_SECRET,
    logDir: LOGS,
    generator: 'k6, a child of this process',
    envFor: { gateway: { GRAPHQL_RESPONSE_CACHE_MIB: '0' }, auth: callerAuthEnv(CALLERS) },
    log,
  });
  const { system, pinning, dataDir } = bench;
  let peers: Peers | undefined;
  try {
    peers = await startPeers({ system, portOffset: PORT_OFFSET, noDedupe: false, workDir: dataDir, logDir: LOGS, log });
    bench.pinAll(peers.all);
    const gw = system.processes.find((p) => p.name === 'gateway')!;
    const alice = `Bearer ${signAccessToken({ sub: '2', name: 'Alice', role: 'user' }, JWT_SECRET, 3600)}`;
    await ensureOrders(gw.url, alice, log);
    const callers = await registerCallers(gw.url, CALLERS, log, 'bench:curves');
    const perConnection = callers.map((c) => ({ authorization: `Bearer ${c.token}` }));
    const measure = k6Driver(k6.bin, dataDir);
    const load = { start: loadavg(), end: [] as number[] };
    const sections: string[] = [];
    const results: { row: string; saturation: number; points: Point[] }[] = [];
    for (const row of rows(system, peers, perConnection)) {
      for (const t of row.targets) {
        log(`bench:curves: warm-up ${row.id} ${t.id} (${WARMUP_S} s)`);
        await measure(t, CONNECTIONS, WARMUP_S);
      }
      const sat = await measure(row.targets[0]!, CONNECTIONS, DURATION_S);
      if (sat.errors)
        throw new Error(`${row.id}: ${sat.errors} failed requests at saturation through Halo; see loadtest/results/logs/curves`);
      log(`bench:curves: ${row.id}: Halo saturates at ${Math.round(sat.rps)} req/s (${CONNECTIONS} connections)`);
      const points: Point[] = [];
      for (const [i, level] of LEVELS.entries()) {
        const offered = Math.max(1, Math.round(level * sat.rps));
        // Rotated per level, so no target always runs first (or last) after the previous level.
        const order = row.targets.map((_, j) => row.targets[(i + j) % row.targets.length]!);
        for (const t of order) {
          const s = await measure(t, CONNECTIONS, DURATION_S, { rate: offered, maxVus: MAX_VUS });
          points.push({ ...s, target: t.id, level, offered });
          log(
            `bench:curves: ${row.id} ${t.id} @ ${offered} req/s: ${Math.round(s.rps)} achieved, p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms` +
              `${s.errors ? `, ${s.errors} failed` : ''}${s.dropped ? `, ${s.dropped} dropped` : ''}`,
          );
        }
      }
      const plotFile = `curves-${row.id}.svg`;
      const svg = await lineChartSvg({
        title: `p99 latency against offered load — ${row.title.replace(/`/g, '')}`,
        subtitle: `open model (k6 constant-arrival-rate), ${DURATION_S} s per point; Halo saturates at ${Math.round(sat.rps)} req/s`,
        x: { title: 'offered load, requests per second' },
        y: { title: 'p99 latency, ms', scale: 'log' },
        series: row.targets.map((t) => ({
          name: t.label,
          points: points.filter((p) => p.target === t.id).map((p) => ({ x: p.offered, y: p.p99 })),
        })),
      });
      writeFileSync(join(PLOTS, plotFile), svg);
      sections.push(renderRow(row, sat.rps, points, `benchmarks/${plotFile}`));
      results.push({ row: row.id, saturation: sat.rps, points });
    }
    load.end = loadavg();
    const section = [
      '## Latency against offered load (open model)',
      '',
      `- Command: \`${COMMAND}\` (${started.toISOString()}); ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}, ${k6.version}`,
      `- CPUs: ${pinning.describe}; load average ${load.start.map((v) => v.toFixed(2)).join(' / ')} → ${load.end.map((v) => v.toFixed(2)).join(' / ')}`,
      `- Method: k6 \`constant-arrival-rate\` at ${LEVELS.map((l) => `${Math.round(l * 100)} %`).join(', ')} of Halo's closed-loop saturation, ${DURATION_S} s per target and level after a ${WARMUP_S} s warm-up; up to ${MAX_VUS} VUs (each one connection; VU i signs in as caller i mod ${CALLERS}); a request unanswered in 10 s fails. The servers as \`npm run bench\` runs them (NODE_ENV=production, LOG_LEVEL=info, Halo's response cache off, the peers on the same subgraphs).`,
      '',
      ...sections,
    ].join('\n');
    // The plots are linked from docs/benchmarks.md; from loadtest/results/ they are two folders up.
    writeFileSync(join(RESULTS, 'curves.md'), `${section.replaceAll('](benchmarks/', '](../../docs/benchmarks/')}\n`);
    writeFileSync(
      join(RESULTS, 'curves.json'),
      `${JSON.stringify({ command: COMMAND, date: started, levels: LEVELS, results }, null, 2)}\n`,
    );
    const doc = existsSync(DOC) ? readFileSync(DOC, 'utf8') : '';
    writeFileSync(DOC, mergeSection(doc, 'curves', `${section}\n`));
    log(`bench:curves: wrote ${relative(ROOT, join(RESULTS, 'curves'))}.{json,md}, the plots in docs/benchmarks/ and docs/benchmarks.md`);
    process.stdout.write(`\n${section}\n`);
  } finally {
    await peers?.stop();
    await bench.stop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:curves failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
