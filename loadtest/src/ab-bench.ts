import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, relative, resolve } from 'node:path';
import autocannon from 'autocannon';
import { startSystem, type RunningSystem } from '@halo/tools';
import { benchSystemEnv, environOf, loadOptions, measure, spawnLogged, stopChildren, waitFor, type ExtraProcess } from './gateways-bench';
import { abRows, baselineOrExit, checkSameAnswers, nodeFlagsOf, registerCallers, revisionOf } from './ab-shared';
import { envList } from './env-list';
import { pin, pinServers, planPinning } from './pin';
import { pairedRatios, perRound, runRounds, spread, type RoundSamples, type Sample, type Spread } from './rounds';

/**
 * `npm run bench:ab` (loadtest/README.md): the gateway's request path, this checkout ("after")
 * against another checkout ("before", BENCH_BASELINE), so a refactor of gateway/src can show
 * after ÷ before ≥ 0.95 per row. The system (every service, embedded PostgreSQL) starts once from
 * THIS checkout as `npm run bench` starts it; two gateways serve it: A, the system's own, and B,
 * the baseline's gateway/dist/main.js run from the baseline checkout with A's environment (from
 * /proc/<pid>/environ) on another port. Both must answer every row byte for byte the same before
 * anything is measured. Paired rounds, pinning and CPU per request as in src/bench.ts.
 */
const ROOT = resolve(__dirname, '../..');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WARMUP_S = Number(process.env.BENCH_WARMUP ?? Math.min(5, DURATION_S));
/** The system's ports + offset (default 300: beside `npm start` and `npm run bench`); gateway B on 4995 + offset. */
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 300);
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs/ab');
/** A fresh secret per run. */
const JWT_SECRET = randomBytes(32).toString('base64url');
/** The goal of a refactor: after ÷ before (req/s), and before ÷ after (CPU per request), at least this. */
const GOAL = 0.95;
const KNOBS =
  'BENCH_BASELINE BENCH_ROWS BENCH_ROUNDS BENCH_DURATION BENCH_WARMUP BENCH_CONNECTIONS BENCH_PORT_OFFSET BENCH_GATEWAY_ENV BENCH_B_ENV BENCH_B_FLAGS'.split(
    ' ',
  );
const COMMAND = [...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${JSON.stringify(process.env[k])}`), 'npm run bench:ab'].join(' ');

interface AbRow {
  id: string;
  title: string;
  after: TargetFigures;
  before: TargetFigures;
  /** after ÷ before req/s, per round. */
  rpsRatio: { values: number[]; spread: Spread };
  /** before ÷ after CPU µs per request, per round (> 1: after spends less). */
  cpuRatio: { values: number[]; spread: Spread };
  met: boolean;
}

interface TargetFigures {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerRequest: number;
  errors: number;
  timeouts: number;
  requests: number;
}

function figures(rounds: RoundSamples[], id: string): TargetFigures {
  const m = (of: (s: Sample) => number | null) => spread(perRound(rounds, id, of)).median;
  const sum = (of: (s: Sample) => number) => perRound(rounds, id, of).reduce((a, b) => a + b, 0);
  return {
    rps: m((s) => s.rps),
    p50: m((s) => s.p50),
    p99: m((s) => s.p99),
    cpuUsPerRequest: m((s) => s.cpuUsPerRequest),
    errors: sum((s) => s.errors),
    timeouts: sum((s) => s.timeouts ?? 0),
    requests: sum((s) => s.requests),
  };
}

const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(3)}×` : '—');
const int = (v: number) => (Number.isFinite(v) ? String(Math.round(v)) : '—');
const range = (s: Spread) => (s.n ? `${x(s.min)}–${x(s.max)}` : '—');
const errorsText = (f: TargetFigures) => (f.errors ? `**${f.errors} ERRORS**${f.timeouts ? ` (${f.timeouts} timed out)` : ''}` : '0');

function renderTable(rows: AbRow[]): string {
  return [
    `| row | req/s after / before | **after ÷ before req/s** (min–max) | p99 ms after / before | CPU µs/req after / before | **CPU before ÷ after** (min–max) | errors after / before | ≥ ${GOAL} |`,
    '|---|---:|---|---:|---:|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.id} | ${int(r.after.rps)} / ${int(r.before.rps)} | **${x(r.rpsRatio.spread.median)}** (${range(r.rpsRatio.spread)}) | ${r.after.p99} / ${r.before.p99} |` +
        ` ${int(r.after.cpuUsPerRequest)} / ${int(r.before.cpuUsPerRequest)} | **${x(r.cpuRatio.spread.median)}** (${range(r.cpuRatio.spread)}) |` +
        ` ${errorsText(r.after)} / ${errorsText(r.before)} | ${r.met ? 'yes' : '**no**'} |`,
    ),
    '',
  ].join('\n');
}

function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}`;
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  const baseline = baselineOrExit();
  if (process.env.DATABASE_URL) {
    process.stderr.write('bench:ab: runs on the embedded PostgreSQL only; ignoring DATABASE_URL\n');
    delete process.env.DATABASE_URL;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-ab-'));
  chmodSync(dataDir, 0o755); // the embedded PostgreSQL may run as user postgres
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const pinning = planPinning();
  log(`bench:ab: ${pinning.describe}`);
  // Until everything is started, this process sits on the servers' CPU (children inherit it).
  if (pinning.enabled) pin(process.pid, pinning.serverCpu!);
  const started = new Date();
  const revisions = { after: revisionOf(ROOT), before: revisionOf(baseline) };
  log(`bench:ab: after = ${ROOT} (${revisions.after}); before = ${baseline} (${revisions.before})`);
  let system: RunningSystem | undefined;
  let gatewayB: ExtraProcess | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: benchSystemEnv(JWT_SECRET),
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: {
        // The request path itself: no edge response cache (an anonymous row would be served from it).
        gateway: { GRAPHQL_RESPONSE_CACHE_MIB: '0', ...envList('BENCH_GATEWAY_ENV') },
        // BENCH_CONNECTIONS distinct callers registered from one address, whose tokens outlive a long run.
        auth: { REGISTER_MAX_PER_IP: String(CONNECTIONS + 10), ACCESS_TOKEN_TTL: '24h' },
      },
      logDir: LOGS,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
    const gwA = system.processes.find((p) => p.name === 'gateway')!;
    const portB = 4995 + PORT_OFFSET;
    // The baseline's gateway exactly as A runs (same secrets, registry, service key, NODE_OPTIONS), from its own checkout.
    gatewayB = {
      name: 'gateway-before',
      url: `http://127.0.0.1:${portB}`,
      // A's node flags too (the launcher starts the gateway with V8 heap flags): the same runtime both sides.
      child: spawnLogged(
        'gateway-before',
        // BENCH_B_FLAGS: extra node flags for B alone (space-separated), e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
        // to profile the request path under this load (flags NODE_OPTIONS refuses).
        [
          ...nodeFlagsOf(gwA.child.pid!),
          ...(process.env.BENCH_B_FLAGS ?? '').split(/\s+/).filter(Boolean),
          join(baseline, 'gateway/dist/main.js'),
        ],
        { ...environOf(gwA.child.pid!), HTTP_PORT: String(portB), METRICS_PORT: '0', ...envList('BENCH_B_ENV') },
        LOGS,
        baseline,
      ),
    };
    const b = gatewayB;
    await waitFor(b, async () => (await fetch(`${b.url}/readyz`)).ok);
    const readySecs = (Date.now() - started.getTime()) / 1000;

    const affinity = pinServers(pinning, [
      ...system.processes.map((p) => ({ name: p.replica ? `${p.name}-${p.replica}` : p.name, pid: p.child.pid! })),
      ...(system.postgres ? [{ name: 'postgres', pid: system.postgres.child.pid! }] : []),
      { name: b.name, pid: b.child.pid! },
    ]);
    if (pinning.enabled) log(`bench:ab: pinned ${affinity.length} processes`);

    const callers = await registerCallers(gwA.url, CONNECTIONS, log);
    const rows = abRows(
      [
        { side: 'after', label: 'after (this checkout)', url: gwA.url, pid: gwA.child.pid! },
        { side: 'before', label: 'before (baseline)', url: b.url, pid: b.child.pid! },
      ],
      callers,
    );
    await checkSameAnswers(rows, callers, log);

    for (const r of rows) {
      for (const t of r.targets) {
        log(`bench:ab: warm-up ${t.id} (${WARMUP_S} s)`);
        await autocannon(loadOptions(t, CONNECTIONS, WARMUP_S));
      }
    }
    const load = { start: loadavg(), end: [] as number[] };
    const rounds = await runRounds(rows, ROUNDS, async (t, round) => {
      const s = await measure(t, CONNECTIONS, DURATION_S);
      log(
        `bench:ab: round ${round + 1}/${ROUNDS} ${t.id}: ${Math.round(s.rps)} req/s, p99 ${s.p99} ms, ${Math.round(s.cpuUsPerRequest ?? NaN)} µs CPU/req` +
          `${s.errors ? `, ${s.errors} ERRORS (${s.timeouts ?? 0} timed out)` : ''}`,
      );
      return s;
    });
    load.end = loadavg();

    const results: AbRow[] = rows.map((r) => {
      const rps = pairedRatios(rounds, `${r.id}:after`, `${r.id}:before`);
      const cpu = pairedRatios(rounds, `${r.id}:before`, `${r.id}:after`, (s) => s.cpuUsPerRequest);
      const after = figures(rounds, `${r.id}:after`);
      const before = figures(rounds, `${r.id}:before`);
      const rpsRatio = { values: rps, spread: spread(rps) };
      const cpuRatio = { values: cpu, spread: spread(cpu) };
      return {
        id: r.id,
        title: r.title,
        after,
        before,
        rpsRatio,
        cpuRatio,
        met: rpsRatio.spread.median >= GOAL && cpuRatio.spread.median >= GOAL && !after.errors && !before.errors,
      };
    });
    const errors = results.reduce((a, r) => a + r.after.errors + r.before.errors, 0);
    const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' / ');
    const table = renderTable(results);
    const md = [
      '## Gateway A/B: this checkout (after) ÷ a baseline (before)',
      '',
      `- Command: \`${COMMAND}\` (${started.toISOString()}); system and both gateways ready ${readySecs.toFixed(1)} s after launch`,
      `- after: ${ROOT} at ${revisions.after}; before: ${baseline} at ${revisions.before} (its gateway/dist/main.js, A's environment)`,
      `- Machine: ${machine()}; ${pinning.describe}`,
      `- Load average (1 / 5 / 15 min) while measuring: ${loadText(load.start)} → ${loadText(load.end)}`,
      `- Method: ${CONNECTIONS} closed-loop connections (autocannon), ${ROUNDS} rounds × ${DURATION_S} s per target after a ${WARMUP_S} s warm-up of each;` +
        ' after and before back to back, their order alternating each round; ratios computed inside each round, the median shown with the min–max.' +
        ' CPU per request: utime + stime of each gateway process (/proc/<pid>/stat) over the interval ÷ requests completed.' +
        ` Services and gateways: NODE_ENV=production, LOG_LEVEL=info, GRAPHQL_MAX_COST=5000, response cache off. Goal per row: both ratios ≥ ${GOAL}, 0 errors.`,
      ...(errors
        ? ['', `**${errors} FAILED REQUESTS while measuring (non-2xx or connection errors): the figures are not comparable.**`]
        : []),
      '',
      table,
      '### Rows',
      '',
      ...results.map((r) => `- ${r.id}: ${r.title}`),
      '',
      '### Per-round ratios',
      '',
      '| row | after ÷ before req/s | before ÷ after CPU/req |',
      '|---|---|---|',
      ...results.map(
        (r) =>
          `| ${r.id} | ${r.rpsRatio.values.map((v) => v.toFixed(3)).join(', ')} | ${r.cpuRatio.values.map((v) => v.toFixed(3)).join(', ')} |`,
      ),
      '',
      ...(affinity.length
        ? ['### CPU affinity after pinning', '', ...affinity.map((a) => `- ${a.name} (pid ${a.pid}): CPU ${a.cpus}`), '']
        : []),
    ].join('\n');
    writeFileSync(join(RESULTS, 'ab.md'), md);
    writeFileSync(
      join(RESULTS, 'ab.json'),
      `${JSON.stringify(
        {
          command: COMMAND,
          date: started.toISOString(),
          machine: machine(),
          after: { dir: ROOT, revision: revisions.after },
          before: { dir: baseline, revision: revisions.before },
          config: {
            connections: CONNECTIONS,
            durationS: DURATION_S,
            rounds: ROUNDS,
            warmupS: WARMUP_S,
            portOffset: PORT_OFFSET,
            goal: GOAL,
          },
          pinning: { ...pinning, affinity },
          loadAverage: load,
          rows: results,
          rounds,
        },
        null,
        2,
      )}\n`,
    );
    log(`bench:ab: wrote ${relative(ROOT, join(RESULTS, 'ab'))}.{json,md}`);
    process.stdout.write(
      [
        '',
        `${COMMAND} — after ${revisions.after} vs before ${revisions.before} — ${machine()}`,
        `${pinning.describe}; load average ${loadText(load.start)} → ${loadText(load.end)}${errors ? `; ${errors} REQUEST ERRORS while measuring` : ''}`,
        '',
        table,
      ].join('\n'),
    );
    if (errors) process.exitCode = 1;
  } finally {
    if (gatewayB) await stopChildren([gatewayB.child]);
    await system?.stop();
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:ab failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
