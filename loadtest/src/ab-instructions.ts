import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import autocannon from 'autocannon';
import { startSystem, type RunningSystem } from '@halo/tools';
import { abRows, baselineOrExit, checkSameAnswers, nodeFlagsOf, registerCallers, revisionOf, type AbTarget, type Side } from './ab-shared';
import { benchSystemEnv, environOf, stopChildren } from './gateways-bench';
import { perConnectionHeaders } from './per-connection';
import { median } from './rounds';

/**
 * `npm run bench:ab:instructions` (loadtest/README.md): the gateway's request path, this checkout
 * ("after") against BENCH_BASELINE ("before"), counted in machine instructions per request instead
 * of seconds. On two shared cores a paired throughput run (src/ab-bench.ts) swings ±20 % per round
 * even when both sides are the same build, wider than the 5 % a refactor must stay within;
 * instructions executed do not depend on what else the machine runs.
 *
 * Both gateways run as extra processes under `valgrind --tool=callgrind` with instrumentation off
 * (near full speed), beside one system started from this checkout, with the system gateway's
 * environment and node flags. Per row and side: a warm-up with instrumentation off (the JIT tiers
 * up as it would in production), then per round instrumentation on, counters zeroed, exactly
 * BENCH_REQUESTS requests over BENCH_CONNECTIONS connections (distinct callers for `me`), the
 * instructions of every thread of the process read, instrumentation off. The sides alternate
 * first/second round by round. GC and JIT work done during the window is counted, as it is a cost
 * of the requests.
 */
const ROOT = resolve(__dirname, '../..');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1000);
const WARMUP = Number(process.env.BENCH_WARMUP_REQUESTS ?? 2000);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 300);
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs/ab-instructions');
const GOAL = 0.95;
const KNOBS = [
  'BENCH_BASELINE',
  'BENCH_ROWS',
  'BENCH_ROUNDS',
  'BENCH_REQUESTS',
  'BENCH_WARMUP_REQUESTS',
  'BENCH_CONNECTIONS',
  'BENCH_PORT_OFFSET',
];
const COMMAND = [...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`), 'npm run bench:ab:instructions'].join(' ');

/** The `me` row is ~5× dearer per request: fewer requests keep its rounds as long as the others'. */
const requestsOf = (row: string) => (row === 'me' ? Math.max(100, Math.round(REQUESTS / 5)) : REQUESTS);

function callgrind(pid: number, ...args: string[]): string {
  return execFileSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

/** Instructions executed by every thread since the counters were zeroed (`Th N  1,234` lines). */
export function parseInstructions(text: string): number {
  let total = 0;
  for (const m of text.matchAll(/^\s*Th\s+\d+\s+([\d,]+)\s*$/gm)) total += Number(m[1]!.replaceAll(',', ''));
  if (!total) throw new Error(`callgrind_control printed no instruction counts:\n${text}`);
  return total;
}

function spawnUnderCallgrind(side: Side, args: string[], env: Record<string, string>, cwd: string): ChildProcess {
  const fd = openSync(join(LOGS, `gateway-${side}.log`), 'w');
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(LOGS, `callgrind-${side}.out`)}`, process.execPath, ...args],
    { cwd, env, stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  return child;
}

async function waitReady(url: string, child: ChildProcess): Promise<void> {
  for (let waited = 0; waited < 180_000; waited += 500) {
    if (child.exitCode !== null) throw new Error(`${url}: the gateway exited (${child.exitCode}) while starting; see ${LOGS}`);
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${url}: not ready within 180 s under valgrind`);
}

async function send(t: AbTarget, amount: number): Promise<void> {
  const r = await autocannon({
    url: t.url,
    connections: CONNECTIONS,
    amount,
    timeout: 60,
    ...t.init,
    ...(t.perConnection ? { setupClient: perConnectionHeaders(t.perConnection) } : {}),
  });
  const failed = r.errors + r.non2xx;
  if (failed) throw new Error(`${t.id}: ${failed} of ${amount} requests failed: the count would not be comparable`);
}

async function count(t: AbTarget & { pid: number }, amount: number): Promise<number> {
  callgrind(t.pid, '--instr=on');
  callgrind(t.pid, '--zero');
  await send(t, amount);
  const instructions = parseInstructions(callgrind(t.pid, '-e', 'Ir'));
  callgrind(t.pid, '--instr=off');
  return instructions / amount;
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  const baseline = baselineOrExit();
  if (spawnSync('callgrind_control', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new Error('callgrind_control not found: install valgrind (Debian: apt-get install valgrind)');
  }
  delete process.env.DATABASE_URL;
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-abi-'));
  chmodSync(dataDir, 0o755);
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const revisions = { after: revisionOf(ROOT), before: revisionOf(baseline) };
  const started = new Date();
  let system: RunningSystem | undefined;
  const gateways: { side: Side; url: string; child: ChildProcess }[] = [];
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: benchSystemEnv(randomBytes(32).toString('base64url')),
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: {
        gateway: { GRAPHQL_RESPONSE_CACHE_MIB: '0' },
        auth: { REGISTER_MAX_PER_IP: String(CONNECTIONS + 10), ACCESS_TOKEN_TTL: '24h' },
      },
      logDir: LOGS,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
    const gw = system.processes.find((p) => p.name === 'gateway')!;
    const env = environOf(gw.child.pid!);
    const flags = nodeFlagsOf(gw.child.pid!);
    for (const [i, [side, dir]] of (
      [
        ['after', ROOT],
        ['before', baseline],
      ] as const
    ).entries()) {
      const url = `http://127.0.0.1:${4993 + i + PORT_OFFSET}`;
      const port = String(4993 + i + PORT_OFFSET);
      gateways.push({
        side,
        url,
        child: spawnUnderCallgrind(
          side,
          [...flags, join(dir, 'gateway/dist/main.js')],
          { ...env, HTTP_PORT: port, METRICS_PORT: '0' },
          dir,
        ),
      });
    }
    await Promise.all(gateways.map((g) => waitReady(g.url, g.child)));
    log(`bench:ab:instructions: both gateways ready under callgrind (${((Date.now() - started.getTime()) / 1000).toFixed(0)} s)`);
    const callers = await registerCallers(gw.url, CONNECTIONS, log);
    const rows = abRows(
      gateways.map((g) => ({ side: g.side, label: g.side, url: g.url, pid: g.child.pid! })),
      callers,
    );
    await checkSameAnswers(rows, callers, log);
    for (const r of rows) for (const t of r.targets) await send(t, r.id === 'me' ? Math.round(WARMUP / 5) : WARMUP);
    log('bench:ab:instructions: warmed up');

    const perRow = new Map<string, { after: number[]; before: number[] }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of rows) {
        const order = round % 2 === 0 ? r.targets : [...r.targets].reverse();
        const got = perRow.get(r.id) ?? { after: [], before: [] };
        for (const t of order) {
          const perRequest = await count({ ...t, pid: t.cpuPid! }, requestsOf(r.id));
          got[t.side].push(perRequest);
          log(
            `bench:ab:instructions: round ${round + 1}/${ROUNDS} ${t.id}: ${Math.round(perRequest).toLocaleString('en')} instructions/request`,
          );
        }
        perRow.set(r.id, got);
      }
    }
    const lines = [
      '## Gateway A/B in instructions per request (callgrind)',
      '',
      `- Command: \`${COMMAND}\` (${started.toISOString()})`,
      `- after: ${ROOT} at ${revisions.after}; before: ${baseline} at ${revisions.before}`,
      `- Method: both gateways under valgrind --tool=callgrind (instrumented only while counting), ${CONNECTIONS} connections;` +
        ` per round and side ${REQUESTS} requests (me: ${requestsOf('me')}) after a warm-up of ${WARMUP} (me: ${Math.round(WARMUP / 5)});` +
        ` every thread's instructions ÷ requests; sides alternate first/second each round. Goal: before ÷ after ≥ ${GOAL} on every row.`,
      '',
      '| row | instructions/request after | before | **before ÷ after** (per round) | ≥ 0.95 |',
      '|---|---:|---:|---|---|',
    ];
    for (const r of rows) {
      const { after, before } = perRow.get(r.id)!;
      const ratios = after.map((a, i) => before[i]! / a);
      const m = median(ratios);
      lines.push(
        `| ${r.id} | ${Math.round(median(after)).toLocaleString('en')} | ${Math.round(median(before)).toLocaleString('en')} | **${m.toFixed(3)}×** (${ratios.map((x) => x.toFixed(3)).join(', ')}) | ${m >= GOAL ? 'yes' : '**no**'} |`,
      );
    }
    const md = `${lines.join('\n')}\n`;
    writeFileSync(join(RESULTS, 'ab-instructions.md'), md);
    log(`bench:ab:instructions: wrote ${relative(ROOT, join(RESULTS, 'ab-instructions.md'))}`);
    process.stdout.write(`\n${md}`);
  } finally {
    await stopChildren(gateways.map((g) => g.child));
    await system?.stop();
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:ab:instructions failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
