import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { EDGE_SERVICE_NAMES, SERVICE_NAMES } from '@halo/kit/config';
import { openDb, openRedis, redisReady } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { dropSchema } from '@halo/kit/testing';
import { startSystem, type RunningProcess, type RunningSystem, type SystemAddresses } from '@halo/tools';
import { mergeSection } from './benchmarks-doc';
import { callerAuthEnv, registerCallers, type Caller } from './callers';
import { startChat, type ChatReport } from './cluster-chat';
import { payLoop, readLoop, Recorder, type PaymentOutcome } from './cluster-load';
import { startClusterNginx, type Balanced, type ClusterNginx } from './cluster-nginx';
import { renderCluster, type ClusterResult, type KillRecord, type PaymentsCheck } from './cluster-report';
import { benchSystemEnv, environOf, spawnLogged, stopChildren, type ExtraProcess } from './gateways-bench';
import { findNginx } from './peers/nginx';
import { nodeFlagsOf } from './pin';

/**
 * `npm run bench:cluster` (loadtest/README.md): a scaled-down multi-replica Halo on one machine,
 * under mixed load, with one replica of each service and one gateway killed mid-run. Two
 * processes of each edge service (the launcher's `replicas`), two gateways (the launcher's and
 * one started here with its environment), nginx in front of each service's replicas and of the
 * gateways; PostgreSQL and Redis are the machine's own, in throwaway schemas and key prefixes.
 * Exits non-zero on a duplicated charge, a payment that never succeeded, or a lost message.
 */
const ROOT = resolve(__dirname, '../..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const KILL_AT_S = Number(process.env.BENCH_KILL_AT ?? 20);
const KILL_GAP_S = Number(process.env.BENCH_KILL_GAP ?? 2);
const CALLERS = Number(process.env.BENCH_CALLERS ?? 24);
const READERS = Number(process.env.BENCH_READERS ?? 8);
const PAYERS = Number(process.env.BENCH_PAYERS ?? 2);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 4);
const MESSAGES_PER_S = Number(process.env.BENCH_MESSAGE_RATE ?? 10);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 600);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs');
const DOC = resolve(ROOT, 'docs/benchmarks.md');
/** nginx's listeners: the front (clients) and one per edge service; the second gateway beside them. */
const FRONT_PORT = 4980 + PORT_OFFSET;
const SECOND_GATEWAY_PORT = 4979 + PORT_OFFSET;
const servicePort = (name: string) => 4981 + PORT_OFFSET + EDGE_SERVICE_NAMES.indexOf(name as (typeof EDGE_SERVICE_NAMES)[number]);
const JWT_SECRET = randomBytes(32).toString('base64url');
/** This run's schemas (`<prefix><service>`) and Redis keys (`halo:<prefix>…`, as the services derive them from their schema). */
const PREFIX = `cluster_${process.pid}_`;
const KNOBS = [
  'BENCH_SECONDS',
  'BENCH_KILL_AT',
  'BENCH_KILL_GAP',
  'BENCH_CALLERS',
  'BENCH_READERS',
  'BENCH_PAYERS',
  'BENCH_SUBSCRIBERS',
  'BENCH_MESSAGE_RATE',
  'BENCH_PORT_OFFSET',
];
const COMMAND = [...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`), 'npm run bench:cluster'].join(' ');
const log = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every server of the run: the system's processes and the second gateway, each under one name. */
interface Target {
  name: string;
  url: string;
  readyPath: string;
  child(): ExtraProcess['child'];
}

const nameOf = (p: RunningProcess) => `${p.name}${p.replica ? `-${p.replica + 1}` : ''}`;
const asTarget = (p: RunningProcess): Target => ({ name: nameOf(p), url: p.url, readyPath: p.readyPath, child: () => p.child });

/** What nginx balances: the gateways at the front, each edge service's replicas. */
function upstreams(system: RunningSystem | undefined, gateways: readonly string[], addresses: SystemAddresses['services']): Balanced[] {
  return [
    { name: 'front', port: FRONT_PORT, servers: [...gateways] },
    ...EDGE_SERVICE_NAMES.map((name) => ({
      name,
      port: servicePort(name),
      servers: system ? system.processes.filter((p) => p.name === name).map((p) => p.url) : [addresses[name].url],
    })),
  ];
}

function systemOptions(nginxRef: { current?: ClusterNginx }, nginxBin: string, dataDir: string, launcherLog: number) {
  const serviceUrls = Object.fromEntries(EDGE_SERVICE_NAMES.map((n) => [`${n.toUpperCase()}_URL`, `http://127.0.0.1:${servicePort(n)}`]));
  return {
    portOffset: PORT_OFFSET,
    devOidc: false,
    readyTimeoutMs: 180_000,
    replicas: Object.fromEntries(EDGE_SERVICE_NAMES.map((n) => [n, 2])),
    env: { ...benchSystemEnv(JWT_SECRET), DATABASE_URL, REDIS_URL },
    envFor: {
      ...Object.fromEntries(SERVICE_NAMES.map((name) => [name, { DB_SCHEMA: `${PREFIX}${name}` }])),
      auth: { DB_SCHEMA: `${PREFIX}auth`, ...callerAuthEnv(CALLERS) },
      // The gateways reach every service through its nginx upstream; they share Redis under this run's prefix.
      gateway: { ...serviceUrls, REDIS_KEY_PREFIX: `halo:${PREFIX}gateway:`, GRAPHQL_RESPONSE_CACHE_MIB: '0' },
    },
    logDir: LOGS,
    onLog: (name: string, line: string) => writeSync(launcherLog, `${name}| ${line}\n`),
    // nginx listens before the gateway boots: on the first process of each service until the replicas are known.
    onStarting: (addresses: SystemAddresses) => {
      nginxRef.current ??= startClusterNginx(
        nginxBin,
        join(dataDir, 'nginx'),
        LOGS,
        upstreams(undefined, [addresses.gatewayUrl], addresses.services),
      );
    },
  };
}

async function answersReady(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

async function waitReady(t: Target, timeoutMs: number, other?: ExtraProcess['child']): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const child = t.child();
    if (child !== other && child.exitCode === null && child.signalCode === null && (await answersReady(`${t.url}${t.readyPath}`)))
      return true;
    await sleep(200);
  }
  return false;
}

/** The second gateway: the launcher's gateway's command line and environment, another port, no metrics port. */
async function startSecondGateway(system: RunningSystem): Promise<ExtraProcess> {
  const first = system.processes.find((p) => p.name === 'gateway')!;
  const env = { ...environOf(first.child.pid!), HTTP_PORT: String(SECOND_GATEWAY_PORT), METRICS_PORT: '0' };
  const args = [...nodeFlagsOf(first.child.pid!), resolve(ROOT, 'gateway/dist/main.js')];
  const proc = { name: 'gateway-2', url: `http://127.0.0.1:${SECOND_GATEWAY_PORT}`, child: spawnLogged('gateway-2', args, env, LOGS) };
  if (!(await waitReady({ ...proc, readyPath: '/readyz', child: () => proc.child }, 120_000)))
    throw new Error('gateway-2 was not ready within 120 s; see loadtest/results/logs/gateway-2.log');
  return proc;
}

/** SIGKILL `t`'s current process; resolves with when, and how long until its restart answered ready. */
async function kill(t: Target, rec: Recorder): Promise<KillRecord> {
  const child = t.child();
  const atS = rec.seconds();
  child.kill('SIGKILL');
  log(`cluster: killed ${t.name} (pid ${child.pid}) at ${atS.toFixed(1)} s`);
  const back = await waitReady(t, 60_000, child);
  const backAfterS = back ? rec.seconds() - atS : null;
  log(`cluster: ${t.name} ${back ? `ready again after ${backAfterS!.toFixed(1)} s (pid ${t.child().pid})` : 'NOT back within 60 s'}`);
  return { process: t.name, pid: child.pid!, atS, backAfterS, newPid: back ? t.child().pid! : null };
}

/** One process of each edge service (the first: also the one its peers reach over gRPC) and the launcher's gateway, KILL_GAP_S apart. */
async function killSchedule(system: RunningSystem, rec: Recorder): Promise<KillRecord[]> {
  const victims = [
    ...EDGE_SERVICE_NAMES.map((n) => system.processes.find((p) => p.name === n && !p.replica)!),
    system.processes.find((p) => p.name === 'gateway')!,
  ];
  const pending: Promise<KillRecord>[] = [];
  for (const [i, p] of victims.entries()) {
    await sleep(Math.max(0, (KILL_AT_S + i * KILL_GAP_S - rec.seconds()) * 1000));
    pending.push(kill(asTarget(p), rec));
  }
  return Promise.all(pending);
}

/** Each key the run used, as the payments table has it: exactly one row, charged, the id the client was answered. */
async function checkPayments(outcomes: readonly PaymentOutcome[], run: string): Promise<PaymentsCheck> {
  const db = await openDb({ url: DATABASE_URL, schema: `${PREFIX}payments` });
  try {
    const { rows } = await db.query<{ key: string; rows: number; charged: number; id: string }>(
      `SELECT idempotency_key AS key, count(*)::int AS rows, (count(*) FILTER (WHERE status = 'succeeded'))::int AS charged, min(id)::text AS id
         FROM payments WHERE idempotency_key LIKE $1 GROUP BY 1`,
      [`cluster-${run}-%`],
    );
    const byKey = new Map(rows.map((r) => [r.key, r]));
    const succeeded = outcomes.filter((o) => o.succeeded);
    return {
      attempted: outcomes.length,
      succeeded: succeeded.length,
      neverSucceeded: outcomes.length - succeeded.length,
      attempts: outcomes.reduce((a, o) => a + o.attempts, 0),
      replayed: outcomes.reduce((a, o) => a + o.replayed, 0),
      rows: rows.reduce((a, r) => a + r.rows, 0),
      duplicated:
        rows.reduce((a, r) => a + Math.max(0, r.charged - 1), 0) +
        succeeded.filter((o) => o.ids.size !== 1 || String([...o.ids][0]) !== byKey.get(o.key)?.id).length,
      missing: succeeded.filter((o) => byKey.get(o.key)?.charged !== 1).length,
    };
  } finally {
    await db.close();
  }
}

/** The run's Redis keys (the services' `halo:<schema>:…`, the gateways' prefix). */
async function dropRedisKeys(): Promise<void> {
  const redis = openRedis(REDIS_URL, createLogger('bench', 'silent'), { enableOfflineQueue: true });
  try {
    if (!(await redisReady(redis))) return;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `halo:${PREFIX}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

interface LoadOutcome {
  payments: PaymentOutcome[];
  chat: ChatReport;
  kills: KillRecord[];
}

/** The mixed load for SECONDS through the front, the kills on their schedule; then payments finish and chat settles. */
async function runLoad(system: RunningSystem, callers: readonly Caller[], rec: Recorder, run: string): Promise<LoadOutcome> {
  const front = `http://127.0.0.1:${FRONT_PORT}`;
  let stop = false;
  const stopped = () => stop;
  const chat = await startChat({ front, callers, subscribers: SUBSCRIBERS, perSecond: MESSAGES_PER_S, rec, stopped, log });
  const readers = Array.from({ length: READERS }, (_, i) => readLoop(front, callers[i % callers.length]!, rec, stopped));
  const payers = Array.from({ length: PAYERS }, (_, i) => payLoop(front, run, i, callers, rec, stopped));
  const kills = killSchedule(system, rec);
  await sleep(SECONDS * 1000);
  stop = true;
  log('cluster: load stopped; the last payments finish, the subscribers catch up');
  await Promise.all(readers);
  const payments = (await Promise.all(payers)).flat();
  return { payments, chat: await chat.finish(), kills: await kills };
}

const machine = () =>
  `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}`;

async function main(): Promise<void> {
  const nginxBin = findNginx();
  if (!nginxBin) throw new Error('nginx not found: bench:cluster balances with it (install it with `apt-get install -y nginx`)');
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-cluster-'));
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const nginx: { current?: ClusterNginx } = {};
  const run = randomBytes(4).toString('hex');
  const started = new Date();
  let system: RunningSystem | undefined;
  let second: ExtraProcess | undefined;
  let failed = false;
  try {
    log(
      `cluster: starting Halo with 2 processes of each of ${EDGE_SERVICE_NAMES.join(', ')} (PostgreSQL ${new URL(DATABASE_URL).host}, Redis ${new URL(REDIS_URL).host}, schemas ${PREFIX}*)`,
    );
    system = await startSystem(systemOptions(nginx, nginxBin, dataDir, launcherLog));
    second = await startSecondGateway(system);
    await nginx.current!.reload(upstreams(system, [system.gatewayUrl, second.url], system.services));
    const processes = [
      ...system.processes.map((p) => ({ name: nameOf(p), pid: p.child.pid!, url: p.url })),
      { name: second.name, pid: second.child.pid!, url: second.url },
    ];
    log(
      `cluster: ready in ${((Date.now() - started.getTime()) / 1000).toFixed(0)} s: ${processes.map((p) => p.name).join(', ')}; front nginx on ${FRONT_PORT}`,
    );
    const callers = await registerCallers(`http://127.0.0.1:${FRONT_PORT}`, CALLERS, log, 'cluster');
    const load = { start: loadavg(), end: [] as number[] };
    const rec = new Recorder();
    const outcome = await runLoad(system, callers, rec, run);
    load.end = loadavg();
    const payments = await checkPayments(outcome.payments, run);
    for (const [why, n] of rec.reasons) log(`cluster: failed ${n}× ${why}`);
    const result: ClusterResult = {
      command: COMMAND,
      date: started.toISOString(),
      machine: machine(),
      config: {
        seconds: SECONDS,
        killAtS: KILL_AT_S,
        killGapS: KILL_GAP_S,
        callers: CALLERS,
        readers: READERS,
        payers: PAYERS,
        subscribers: SUBSCRIBERS,
        messagesPerS: MESSAGES_PER_S,
      },
      processes,
      loadAverage: load,
      windows: rec.windowRows(),
      totals: rec.totals(),
      failures: Object.fromEntries(rec.reasons),
      payments,
      chat: outcome.chat,
      kills: outcome.kills,
    };
    const { table, section, detail } = renderCluster(result);
    writeFileSync(join(RESULTS, 'cluster.json'), `${JSON.stringify(result, null, 2)}\n`);
    writeFileSync(join(RESULTS, 'cluster.md'), detail);
    writeFileSync(DOC, mergeSection(existsSync(DOC) ? readFileSync(DOC, 'utf8') : '', 'cluster', section));
    log(`cluster: wrote ${relative(ROOT, join(RESULTS, 'cluster'))}.{json,md} and ${relative(ROOT, DOC)}`);
    process.stdout.write(`\n${COMMAND} — ${machine()}\n\n${table}\n`);
    failed = payments.duplicated > 0 || payments.neverSucceeded > 0 || payments.missing > 0 || outcome.chat.lost > 0;
    if (failed) log('cluster: FAILED: a duplicated or missing charge, a payment that never succeeded, or a lost message (above)');
  } finally {
    if (second) await stopChildren([second.child]);
    await system?.stop();
    if (nginx.current) await stopChildren([nginx.current.child]);
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
    for (const name of SERVICE_NAMES) await dropSchema(`${PREFIX}${name}`, DATABASE_URL);
    await dropRedisKeys();
  }
  if (failed) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:cluster failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
