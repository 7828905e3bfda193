import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import autocannon from 'autocannon';
import { startSystem, type RunningSystem } from '@halo/tools';
import { freePort, LATE_ENV_VAR } from '@halo/kit/launch';
import {
  benchSystemEnv,
  environOf,
  gqlInit,
  loadOptions,
  QUERIES,
  spawnLogged,
  stopChildren,
  waitFor,
  type ExtraProcess,
} from './gateways-bench';
import { checkSameAnswers, nodeFlagsOf, registerCallers, revisionOf, type AbTarget, type Row } from './ab-shared';
import { cpuMicros, pin, pinServers, planPinning } from './pin';
import { median, runRounds, type RoundSamples, type Sample } from './rounds';

/**
 * `npm run bench:subgraphs` (issue 30): the subgraphs' CPU per request behind the gateway, for
 * `me { orders { id product { name price } user { name } } }` with BENCH_CONNECTIONS (20)
 * distinct callers, one per connection. The system starts as `npm run bench` starts it; every
 * request's CPU time is read per process from /proc (utime + stime over the round ÷ requests):
 * the gateway, auth, content, catalog, payments and PostgreSQL (all its backends).
 *
 * With BENCH_BASELINE=/other/checkout the same four subgraphs are started a second time from that
 * checkout's dist/ ("before", with A's environment on other ports) behind a second gateway from
 * THIS checkout, so the two sides differ in the subgraphs alone; both must answer every caller
 * with the same bytes, and their rounds alternate. BENCH_B_NODE_FLAGS adds node flags to the
 * baseline's subgraphs (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`: profiles written at exit).
 */
const ROOT = resolve(__dirname, '../..');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP_S = Number(process.env.BENCH_WARMUP ?? 5);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 400);
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs/subgraphs');
const JWT_SECRET = randomBytes(32).toString('base64url');
const SUBGRAPHS = ['auth', 'content', 'catalog', 'payments'] as const;
const KNOBS =
  'BENCH_BASELINE BENCH_CONCURRENT BENCH_ROUNDS BENCH_DURATION BENCH_WARMUP BENCH_CONNECTIONS BENCH_PORT_OFFSET BENCH_B_NODE_FLAGS'.split(
    ' ',
  );
const COMMAND = [
  ...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${JSON.stringify(process.env[k])}`),
  'npm run bench:subgraphs',
].join(' ');
const CONCURRENT = process.env.BENCH_CONCURRENT === '1';
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Side {
  side: 'after' | 'before';
  gatewayUrl: string;
  /** Process name → pid, whose CPU is charged to this side's requests. */
  pids: Record<string, number>;
}

type Cpu = Record<string, number>;

/** The baseline's four subgraphs with A's environment on fresh ports, and a gateway (this checkout) in front of them. */
async function startBaseline(system: RunningSystem, baseline: string, extra: ExtraProcess[]): Promise<Side> {
  const flags = process.env.BENCH_B_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const urls: Record<string, string> = {};
  const pids: Record<string, number> = {};
  for (const name of SUBGRAPHS) {
    const a = system.processes.find((p) => p.name === name && !p.replica)!;
    const env: Record<string, string | undefined> = {
      ...environOf(a.child.pid!),
      DATABASE_URL: system.postgres?.databaseUrls[name],
      HTTP_PORT: String(await freePort()),
      GRPC_PORT: String(await freePort()),
      REGISTRY_PUBLISH_ON_START: 'false',
      SEED_DEMO_DATA: 'false',
    };
    delete env[LATE_ENV_VAR];
    const proc: ExtraProcess = {
      name: `${name}-before`,
      url: `http://127.0.0.1:${env.HTTP_PORT}`,
      child: spawnLogged(
        `${name}-before`,
        [...nodeFlagsOf(a.child.pid!), ...flags, join(baseline, 'services', name, 'dist/main.js')],
        env,
        LOGS,
        baseline,
      ),
    };
    extra.push(proc);
    await waitFor(proc, async () => (await fetch(`${proc.url}/readyz`)).ok);
    urls[`${name.toUpperCase()}_URL`] = proc.url;
    pids[name] = proc.child.pid!;
  }
  const gwA = system.processes.find((p) => p.name === 'gateway')!;
  const port = await freePort();
  const gw: ExtraProcess = {
    name: 'gateway-before',
    url: `http://127.0.0.1:${port}`,
    child: spawnLogged(
      'gateway-before',
      [...nodeFlagsOf(gwA.child.pid!), resolve(ROOT, 'gateway/dist/main.js')],
      { ...environOf(gwA.child.pid!), HTTP_PORT: String(port), METRICS_PORT: '0', ...urls },
      LOGS,
    ),
  };
  extra.push(gw);
  await waitFor(gw, async () => (await fetch(`${gw.url}/readyz`)).ok);
  return { side: 'before', gatewayUrl: gw.url, pids: { gateway: gw.child.pid!, ...pids } };
}

function cpuOf(pids: Record<string, number>): Cpu {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMicros(pid)]));
}

/** One round of one side: autocannon for DURATION_S, CPU µs per request of each process. */
async function measureSide(t: AbTarget, side: Side, perRequest: Map<string, Cpu[]>): Promise<Sample> {
  const before = cpuOf(side.pids);
  const r = await autocannon(loadOptions(t, CONNECTIONS, DURATION_S));
  const after = cpuOf(side.pids);
  const n = r.requests.total;
  const cpu: Cpu = {};
  for (const name of Object.keys(side.pids)) cpu[name] = (after[name]! - before[name]!) / n;
  cpu.subgraphs = SUBGRAPHS.reduce((a, s) => a + cpu[s]!, 0);
  perRequest.set(side.side, [...(perRequest.get(side.side) ?? []), cpu]);
  return {
    rps: n / r.duration,
    requests: n,
    errors: r.errors + r.non2xx,
    timeouts: r.timeouts,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuUsPerRequest: cpu.subgraphs,
  };
}

async function concurrentRounds(targets: AbTarget[], sides: Side[], perRequest: Map<string, Cpu[]>): Promise<RoundSamples[]> {
  const out: RoundSamples[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const samples = await Promise.all(
      targets.map((t) =>
        measureSide(
          t,
          sides.find((x) => x.side === t.side)!,
          perRequest,
        ),
      ),
    );
    out.push(Object.fromEntries(targets.map((t, i) => [t.id, samples[i]!])));
    log(
      `bench:subgraphs: round ${round + 1}/${ROUNDS}: ${targets.map((t, i) => `${t.side} ${Math.round(samples[i]!.cpuUsPerRequest!)} µs/req`).join(', ')}`,
    );
  }
  return out;
}

function table(perRequest: Map<string, Cpu[]>, rps: Map<string, number[]>): string {
  const sides = [...perRequest.keys()];
  const names = ['gateway', ...SUBGRAPHS, 'subgraphs'];
  const med = (side: string, name: string) => median(perRequest.get(side)!.map((c) => c[name]!));
  const range = (side: string, name: string) => {
    const v = perRequest.get(side)!.map((c) => c[name]!);
    return `${Math.round(Math.min(...v))}–${Math.round(Math.max(...v))}`;
  };
  const paired = (name: string) => {
    const a = perRequest.get('after')!;
    const b = perRequest.get('before')!;
    const ratios = a.map((c, i) => b[i]![name]! / c[name]!);
    return `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
  };
  const head = `| process | ${sides.map((s) => `${s} µs/req (min–max)`).join(' | ')} |${sides.length > 1 ? ' before ÷ after (min–max) |' : ''}`;
  return [
    head,
    `|---|${sides.map(() => '---:|').join('')}${sides.length > 1 ? '---|' : ''}`,
    ...names.map(
      (n) =>
        `| ${n === 'subgraphs' ? '**four subgraphs**' : n} | ${sides.map((s) => `${Math.round(med(s, n))} (${range(s, n)})`).join(' | ')} |` +
        (sides.length > 1 ? ` ${paired(n)} |` : ''),
    ),
    `| req/s | ${sides.map((s) => String(Math.round(median(rps.get(s)!)))).join(' | ')} |${sides.length > 1 ? ' |' : ''}`,
    '',
  ].join('\n');
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  const baseline = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
  delete process.env.DATABASE_URL;
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-subgraphs-'));
  chmodSync(dataDir, 0o755);
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const pinning = planPinning();
  if (pinning.enabled) pin(process.pid, pinning.serverCpu!);
  const started = new Date();
  let system: RunningSystem | undefined;
  const extra: ExtraProcess[] = [];
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: benchSystemEnv(JWT_SECRET),
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: {
        gateway: { GRAPHQL_RESPONSE_CACHE_MIB: '0' },
        auth: { REGISTER_MAX_PER_IP: String(CONNECTIONS + 10), ACCESS_TOKEN_TTL: '24h' },
      },
      logDir: LOGS,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
    const pidOf = (name: string) => system!.processes.find((p) => p.name === name && !p.replica)!.child.pid!;
    const sides: Side[] = [
      { side: 'after', gatewayUrl: system.gatewayUrl, pids: Object.fromEntries(['gateway', ...SUBGRAPHS].map((n) => [n, pidOf(n)])) },
    ];
    if (baseline) sides.push(await startBaseline(system, baseline, extra));
    const postgresPid = system.postgres?.child.pid;
    pinServers(pinning, [
      ...system.processes.map((p) => ({ name: p.replica ? `${p.name}-${p.replica}` : p.name, pid: p.child.pid! })),
      ...(postgresPid ? [{ name: 'postgres', pid: postgresPid }] : []),
      ...extra.map((p) => ({ name: p.name, pid: p.child.pid! })),
    ]);
    log(`bench:subgraphs: ${pinning.describe}`);
    const callers = await registerCallers(system.gatewayUrl, CONNECTIONS, log);
    const target = (s: Side): AbTarget => ({
      id: `me:${s.side}`,
      label: s.side,
      side: s.side,
      url: `${s.gatewayUrl}/graphql`,
      init: gqlInit(QUERIES.me),
      perConnection: callers.map((c) => ({ authorization: `Bearer ${c.token}` })),
    });
    const row: Row = { id: 'me', title: QUERIES.me, targets: sides.map(target) };
    if (baseline) await checkSameAnswers([row], callers, log);
    for (const t of row.targets) await autocannon(loadOptions(t, CONNECTIONS, WARMUP_S));
    const perRequest = new Map<string, Cpu[]>();
    const load = { start: loadavg(), end: [] as number[] };
    // BENCH_CONCURRENT=1: both sides under load at once each round, so a noisy neighbour slows both alike.
    const rounds = CONCURRENT
      ? await concurrentRounds(row.targets, sides, perRequest)
      : await runRounds([row], ROUNDS, async (t, round) => {
          const s = await measureSide(
            t,
            sides.find((x) => x.side === t.side)!,
            perRequest,
          );
          log(
            `bench:subgraphs: round ${round + 1}/${ROUNDS} ${t.id}: ${Math.round(s.rps)} req/s, subgraphs ${Math.round(s.cpuUsPerRequest!)} µs/req`,
          );
          return s;
        });
    load.end = loadavg();
    const rps = new Map(sides.map((s) => [s.side, rounds.map((r) => r[`me:${s.side}`]!.rps)]));
    const errors = rounds.reduce((a, r) => a + Object.values(r).reduce((b, s) => b + s.errors, 0), 0);
    const md = [
      '## Subgraph CPU per request (`npm run bench:subgraphs`)',
      '',
      `- Command: \`${COMMAND}\` (${started.toISOString()}); after = ${revisionOf(ROOT)}${baseline ? `, before = ${baseline} (${revisionOf(baseline)})` : ''}`,
      `- Machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}; ${pinning.describe}; load average ${load.start.map((v) => v.toFixed(2)).join('/')} → ${load.end.map((v) => v.toFixed(2)).join('/')}`,
      `- \`${QUERIES.me}\` through the gateway, ${CONNECTIONS} connections, one distinct caller each; ${ROUNDS} rounds × ${DURATION_S} s, ${CONCURRENT ? 'both sides loaded at once' : 'sides alternating'}; CPU µs per request from /proc/<pid>/stat of each process.`,
      ...(errors ? ['', `**${errors} FAILED REQUESTS while measuring**`] : []),
      '',
      table(perRequest, rps),
    ].join('\n');
    writeFileSync(join(RESULTS, 'subgraphs.md'), md);
    writeFileSync(
      join(RESULTS, 'subgraphs.json'),
      `${JSON.stringify({ command: COMMAND, perRequest: Object.fromEntries(perRequest), rounds }, null, 2)}\n`,
    );
    log(`bench:subgraphs: wrote ${relative(ROOT, join(RESULTS, 'subgraphs'))}.{json,md}`);
    process.stdout.write(`\n${md}`);
    if (errors) process.exitCode = 1;
  } finally {
    await stopChildren(extra.map((p) => p.child));
    await system?.stop();
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:subgraphs failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
