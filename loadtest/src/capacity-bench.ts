import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { createLogger } from '@halo/kit/logging';
import { openRedis, redisReady } from '@halo/kit/db';
import { startSystem, type RunningSystem } from '@halo/tools';
import { mergeSection } from './benchmarks-doc';
import { benchSystemEnv } from './gateways-bench';
import { cpuMicros } from './pin';

/**
 * `npm run bench:capacity` (issue 47, docs/capacity.md): two figures the capacity model needs that
 * no load test of the API shows.
 *
 * - Redis pub/sub, the bus between chat replicas: one publisher and one subscriber on one channel
 *   (what a chat replica holds per chat), `BENCH_MESSAGES` (20,000) messages of each size in
 *   `BENCH_SIZES` bytes published in pipelined batches; messages per second until the subscriber
 *   has them all, MB/s, and the Redis server's CPU per message (from /proc).
 * - The registry's poll load: one gateway polls the registry every `BENCH_POLL_MS` (100) ms
 *   (`GET /v1/supergraph`, conditional: 304 while nothing changes). The registry's CPU over
 *   `BENCH_SECONDS` (20) with the gateway polling, less its CPU over as long with the gateway
 *   stopped (SIGSTOP), per poll: what G gateways at REGISTRY_POLL_MS cost the registry (all the
 *   gateway asks of it in that window, usage reports included, is charged to the polls).
 *
 * Writes loadtest/results/capacity.{json,md} and its section of docs/benchmarks.md.
 */
const ROOT = resolve(__dirname, '../..');
const SIZES = (process.env.BENCH_SIZES ?? '256,1024,4096,16384').split(',').map(Number);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** Beside `npm start` and the other benches' defaults (bench:cluster takes 600). */
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 700);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const RESULTS = resolve(ROOT, 'loadtest/results');
const DOC = resolve(ROOT, 'docs/benchmarks.md');
const JWT_SECRET = randomBytes(32).toString('base64url');
const log = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface PubSubRow {
  bytes: number;
  messages: number;
  perSecond: number;
  mbPerSecond: number;
  redisCpuUsPerMessage: number;
}

/** The Redis server's pid (the one listening on the URL's port), for its CPU; null when not found. */
function redisPid(port: string): number | null {
  try {
    const out = execFileSync('pgrep', ['-f', `redis-server .*:${port}`], { encoding: 'utf8' })
      .trim()
      .split('\n')[0];
    return out ? Number(out) : null;
  } catch {
    return null;
  }
}

async function pubsub(): Promise<PubSubRow[]> {
  const logger = createLogger('bench', 'silent');
  const pub = openRedis(REDIS_URL, logger, { enableOfflineQueue: true });
  const sub = openRedis(REDIS_URL, logger, { enableOfflineQueue: true });
  const pid = redisPid(new URL(REDIS_URL).port || '6379');
  try {
    if (!(await redisReady(pub))) throw new Error(`Redis at ${REDIS_URL} is not reachable (start it, or set REDIS_URL)`);
    const rows: PubSubRow[] = [];
    for (const bytes of SIZES) {
      const channel = `halo:bench:capacity:${process.pid}:${bytes}`;
      const payload = randomBytes(Math.ceil(bytes / 2))
        .toString('hex')
        .slice(0, bytes);
      let received = 0;
      let done: () => void = () => undefined;
      const all = new Promise<void>((r) => (done = r));
      const onMessage = (ch: string) => {
        if (ch === channel && ++received === MESSAGES) done();
      };
      sub.on('message', onMessage);
      await sub.subscribe(channel);
      const cpuBefore = pid ? cpuMicros(pid) : NaN;
      const started = performance.now();
      for (let sent = 0; sent < MESSAGES; sent += 100) {
        const batch = pub.pipeline();
        for (let i = sent; i < Math.min(MESSAGES, sent + 100); i++) batch.publish(channel, payload);
        await batch.exec();
      }
      await Promise.race([all, sleep(60_000)]);
      const seconds = (performance.now() - started) / 1000;
      const cpu = pid ? cpuMicros(pid) - cpuBefore : NaN;
      sub.off('message', onMessage);
      await sub.unsubscribe(channel);
      if (received < MESSAGES) throw new Error(`pub/sub ${bytes} B: ${received}/${MESSAGES} messages arrived within 60 s`);
      const row = {
        bytes,
        messages: MESSAGES,
        perSecond: MESSAGES / seconds,
        mbPerSecond: (MESSAGES * bytes) / seconds / 2 ** 20,
        redisCpuUsPerMessage: cpu / MESSAGES,
      };
      log(
        `bench:capacity: pub/sub ${bytes} B: ${Math.round(row.perSecond)} msg/s, ${row.mbPerSecond.toFixed(1)} MB/s, Redis ${row.redisCpuUsPerMessage.toFixed(1)} µs CPU/msg`,
      );
      rows.push(row);
    }
    return rows;
  } finally {
    pub.disconnect();
    sub.disconnect();
  }
}

interface PollRow {
  pollMs: number;
  seconds: number;
  polls: number;
  registryCpuUsPerPoll: number;
  idleCpuUsPerSecond: number;
}

async function registryPolls(): Promise<PollRow> {
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-capacity-'));
  chmodSync(dataDir, 0o755);
  let system: RunningSystem | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: { ...benchSystemEnv(JWT_SECRET), DATABASE_URL: undefined },
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: { gateway: { REGISTRY_POLL_MS: String(POLL_MS) } },
    });
    const registry = system.processes.find((p) => p.name === 'registry')!.child.pid!;
    const gateway = system.processes.find((p) => p.name === 'gateway')!.child.pid!;
    await sleep(3000);
    // The registry's own background work, with nobody polling.
    process.kill(gateway, 'SIGSTOP');
    await sleep(1000);
    let before = cpuMicros(registry);
    await sleep(SECONDS * 1000);
    const idle = cpuMicros(registry) - before;
    process.kill(gateway, 'SIGCONT');
    await sleep(1000);
    before = cpuMicros(registry);
    await sleep(SECONDS * 1000);
    const polling = cpuMicros(registry) - before;
    const polls = (SECONDS * 1000) / POLL_MS;
    const row = {
      pollMs: POLL_MS,
      seconds: SECONDS,
      polls,
      registryCpuUsPerPoll: (polling - idle) / polls,
      idleCpuUsPerSecond: idle / SECONDS,
    };
    log(`bench:capacity: registry ${row.registryCpuUsPerPoll.toFixed(0)} µs CPU per poll (idle ${row.idleCpuUsPerSecond.toFixed(0)} µs/s)`);
    return row;
  } finally {
    await system?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function render(rows: PubSubRow[], poll: PollRow, started: Date): string {
  const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '—');
  const gateways = (g: number, pollMs: number) => ((g * 1000) / pollMs) * poll.registryCpuUsPerPoll;
  return [
    '## Capacity inputs: Redis pub/sub and the registry’s poll load',
    '',
    `- Command: \`npm run bench:capacity\` (${started.toISOString()}); ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}; not pinned`,
    `- Redis pub/sub: one publisher, one subscriber, one channel (a chat replica's subscription to one chat), ${MESSAGES} messages per size published in pipelined batches of 100; until the subscriber has them all.`,
    '',
    '| message bytes | messages/s | MB/s | Redis CPU µs per message |',
    '|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.bytes} | ${Math.round(r.perSecond)} | ${f(r.mbPerSecond)} | ${f(r.redisCpuUsPerMessage)} |`),
    '',
    `- Registry polls: one gateway polling \`GET /v1/supergraph\` every ${poll.pollMs} ms (304: nothing changed) for ${poll.seconds} s, against as long with the gateway stopped: **${f(poll.registryCpuUsPerPoll, 0)} µs of registry CPU per poll** (its idle work: ${f(poll.idleCpuUsPerSecond, 0)} µs/s). At the default REGISTRY_POLL_MS=2000: 10 gateways ≈ ${f(gateways(10, 2000) / 10_000, 2)} % of a core, 100 gateways ≈ ${f(gateways(100, 2000) / 10_000, 2)} %, 1,000 gateways ≈ ${f(gateways(1000, 2000) / 10_000, 1)} %.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const started = new Date();
  const rows = await pubsub();
  const poll = await registryPolls();
  const section = render(rows, poll, started);
  writeFileSync(join(RESULTS, 'capacity.md'), `${section}\n`);
  writeFileSync(join(RESULTS, 'capacity.json'), `${JSON.stringify({ date: started, pubsub: rows, registryPolls: poll }, null, 2)}\n`);
  const doc = existsSync(DOC) ? readFileSync(DOC, 'utf8') : '';
  writeFileSync(DOC, mergeSection(doc, 'capacity', section));
  log(`bench:capacity: wrote ${relative(ROOT, join(RESULTS, 'capacity'))}.{json,md} and docs/benchmarks.md`);
  process.stdout.write(`\n${section}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:capacity failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
