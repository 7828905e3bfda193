import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import autocannon from 'autocannon';
import { startSystem, type RunningSystem } from '@halo/tools';
import { parseOperationsCli, runOperationsCli } from '@halo/tools/dist/operations';
import { registerCallers } from './callers';
import { benchSystemEnv, loadOptions, measure, QUERIES, type LoadTarget } from './gateways-bench';
import { pin, pinServers, planPinning } from './pin';
import { pairedRatios, perRound, runRounds, spread, type Group, type RoundSamples } from './rounds';

/**
 * `npm run bench:registered` (loadtest/README.md): what a registered operation costs the gateway
 * sent by its id alone against the same operation sent in full, both through a gateway with
 * PERSISTED_OPERATIONS=enforce. The system starts as `npm run bench:ab` starts it (embedded
 * PostgreSQL, NODE_ENV=production, LOG_LEVEL=info, response cache off), the operation is pushed
 * to the registry as a client app pushes it (`npm run operations -- push`), and the gateway has
 * loaded the list before anything is measured. BENCH_CONNECTIONS distinct callers (one per
 * connection) ask `me { orders … }`: one row, two targets, paired rounds with the order
 * alternating, CPU per request of the gateway process. Writes loadtest/results/registered.{md,json}.
 */
const ROOT = resolve(__dirname, '../..');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WARMUP_S = Number(process.env.BENCH_WARMUP ?? Math.min(5, DURATION_S));
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 300);
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs/registered');
const JWT_SECRET = randomBytes(32).toString('base64url');
const CLIENT = { 'apollographql-client-name': 'bench-app', 'apollographql-client-version': '1.0.0' };
const QUERY = QUERIES.me;
const ID = createHash('sha256').update(QUERY).digest('hex');
const COMMAND = [
  ...['BENCH_ROUNDS', 'BENCH_DURATION', 'BENCH_WARMUP', 'BENCH_CONNECTIONS', 'BENCH_PORT_OFFSET']
    .filter((k) => process.env[k])
    .map((k) => `${k}=${process.env[k]}`),
  'npm run bench:registered',
].join(' ');
const log = (line: string) => process.stderr.write(`${line}\n`);

/** The manifest a client app pushes, written where the CLI reads it, pushed with the developer key `npm start` leaves. */
async function push(registry: string, dir: string): Promise<void> {
  const manifest = join(dir, 'manifest.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: [{ id: ID, name: '', type: 'query', body: QUERY }],
    }),
  );
  const args = ['push', '--client', CLIENT['apollographql-client-name'], '--version', CLIENT['apollographql-client-version'], manifest];
  const result = await runOperationsCli(parseOperationsCli([...args, '--registry', registry], {}));
  if (result.code !== 0) throw new Error(`push refused: ${result.err.join('\n')}`);
  log(`bench:registered: ${result.out.join(' ')}`);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The row: the same operation by its id (`documentId`, no text) and in full, one caller per connection. */
function row(url: string, pid: number, tokens: string[]): Group<LoadTarget> {
  const perConnection = tokens.map((t) => ({ authorization: `Bearer ${t}` }));
  const headers = { 'content-type': 'application/json', ...CLIENT };
  const target = (id: string, label: string, body: unknown): LoadTarget => ({
    id,
    label,
    url: `${url}/graphql`,
    init: { method: 'POST', body: JSON.stringify(body), headers },
    perConnection,
    cpuPid: pid,
  });
  return { id: 'me', targets: [target('by-id', 'by id (documentId)', { documentId: ID }), target('full', 'in full', { query: QUERY })] };
}

/** Both targets answer the first caller with the same bytes, or nothing is measured. */
async function sameAnswers(targets: LoadTarget[], token: string): Promise<void> {
  const answers = await Promise.all(
    targets.map(async (t) => {
      const res = await fetch(t.url, { ...t.init, headers: { ...t.init.headers, authorization: `Bearer ${token}` } });
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) throw new Error(`${t.label}: HTTP ${res.status} ${text.slice(0, 300)}`);
      return text;
    }),
  );
  if (answers[0] !== answers[1]) throw new Error(`the two targets answer differently:\n${answers.join('\n')}`);
}

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  delete process.env.DATABASE_URL; // the embedded PostgreSQL, as bench:ab
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-registered-'));
  chmodSync(dataDir, 0o755);
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const pinning = planPinning();
  log(`bench:registered: ${pinning.describe}`);
  if (pinning.enabled) pin(process.pid, pinning.serverCpu!);
  const started = new Date();
  let system: RunningSystem | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: benchSystemEnv(JWT_SECRET),
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: {
        gateway: { GRAPHQL_RESPONSE_CACHE_MIB: '0', PERSISTED_OPERATIONS: 'enforce', REGISTRY_POLL_MS: '500' },
        auth: { REGISTER_MAX_PER_IP: String(CONNECTIONS + 10), ACCESS_TOKEN_TTL: '24h' },
      },
      logDir: LOGS,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
    const gw = system.processes.find((p) => p.name === 'gateway')!;
    const registry = system.processes.find((p) => p.name === 'registry')!.url;
    const affinity = pinServers(pinning, [
      ...system.processes.map((p) => ({ name: p.name, pid: p.child.pid! })),
      ...(system.postgres ? [{ name: 'postgres', pid: system.postgres.child.pid! }] : []),
    ]);
    await push(registry, dataDir);
    const callers = await registerCallers(gw.url, CONNECTIONS, log, 'bench:registered');
    const group = row(
      gw.url,
      gw.child.pid!,
      callers.map((c) => c.token),
    );
    await until('the gateway to load the list', async () => {
      await sameAnswers(group.targets, callers[0]!.token);
      return true;
    });
    for (const t of group.targets) await autocannon(loadOptions(t, CONNECTIONS, WARMUP_S));
    const load = { start: loadavg(), end: [] as number[] };
    const rounds: RoundSamples[] = await runRounds([group], ROUNDS, async (t, round) => {
      const s = await measure(t, CONNECTIONS, DURATION_S);
      log(
        `bench:registered: round ${round + 1}/${ROUNDS} ${t.id}: ${Math.round(s.rps)} req/s, ${Math.round(s.cpuUsPerRequest ?? NaN)} µs CPU/req`,
      );
      return s;
    });
    load.end = loadavg();
    const cpu = spread(pairedRatios(rounds, 'by-id', 'full', (s) => s.cpuUsPerRequest));
    const rps = spread(pairedRatios(rounds, 'by-id', 'full'));
    const m = (id: string, of: Parameters<typeof perRound>[2]) => spread(perRound(rounds, id, of)).median;
    const errors = rounds.reduce((a, r) => a + Object.values(r).reduce((b, s) => b + s.errors, 0), 0);
    const x = (v: number) => `${v.toFixed(3)}×`;
    const table = [
      '| target | req/s | p99 ms | gateway CPU µs/req |',
      '|---|---:|---:|---:|',
      ...group.targets.map(
        (t) =>
          `| ${t.label} | ${Math.round(m(t.id, (s) => s.rps))} | ${m(t.id, (s) => s.p99)} | ${Math.round(m(t.id, (s) => s.cpuUsPerRequest))} |`,
      ),
      '',
      `By id ÷ in full, paired per round (median, min–max): **gateway CPU per request ${x(cpu.median)}** (${x(cpu.min)}–${x(cpu.max)}); req/s ${x(rps.median)} (${x(rps.min)}–${x(rps.max)}). Goal: CPU ≤ 1.`,
      '',
    ].join('\n');
    const md = [
      '## Registered operations: by id vs in full',
      '',
      `- Command: \`${COMMAND}\` (${started.toISOString()}); ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}; ${pinning.describe}`,
      `- Query: \`${QUERY}\`, ${CONNECTIONS} connections, one distinct caller each (5 orders each), client \`bench-app 1.0.0\`; gateway PERSISTED_OPERATIONS=enforce with the operation pushed to the registry.`,
      `- Method: ${ROUNDS} rounds × ${DURATION_S} s per target after a ${WARMUP_S} s warm-up of each, the two back to back, their order alternating; load average ${load.start.map((v) => v.toFixed(2)).join(' / ')} → ${load.end.map((v) => v.toFixed(2)).join(' / ')}.`,
      ...(errors ? ['', `**${errors} FAILED REQUESTS while measuring: the figures are not comparable.**`] : []),
      '',
      table,
    ].join('\n');
    writeFileSync(join(RESULTS, 'registered.md'), md);
    writeFileSync(
      join(RESULTS, 'registered.json'),
      `${JSON.stringify({ command: COMMAND, date: started, affinity, rounds, cpu, rps }, null, 2)}\n`,
    );
    log(`bench:registered: wrote ${relative(ROOT, join(RESULTS, 'registered'))}.{json,md}`);
    process.stdout.write(`\n${md}`);
    if (errors) process.exitCode = 1;
  } finally {
    await system?.stop();
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:registered failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
