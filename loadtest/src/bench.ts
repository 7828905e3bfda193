import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { createLogger, openRedis, redisReady, SERVICE_NAMES } from '@halo/kit';
import { dropSchema } from '@halo/kit/testing';
import { startSystem, type RunningSystem } from '@halo/tools';
import { benchFanout } from './chat-bench';
import { benchPayments } from './payments-bench';

/**
 * `npm run bench`: starts Halo (embedded, NODE_ENV=production) plus a bare node:http server as
 * the machine's ceiling, loads each path with autocannon in ONE run, and prints throughput as
 * ratios (through the gateway vs direct to the service) with every process's peak RSS.
 * Absolute numbers depend on the machine; the ratios are what to compare between runs.
 */
const ROOT = resolve(__dirname, '../..');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 200);
const OUT = resolve(ROOT, 'docs/benchmarks.md');
/** Which database the services run on; each mode keeps its own section of docs/benchmarks.md. */
const MODE = process.env.DATABASE_URL ? 'postgres' : 'embedded';
/** `payments` or `chat`: only that scenario (and only its section is rewritten). */
const ONLY = process.env.BENCH_ONLY;
const runs = (scenario: 'gateway' | 'payments' | 'chat') => ONLY === undefined || ONLY === '' || ONLY === scenario;
/** Subscribers per fan-out row (BENCH_SUBSCRIBERS=100,500). */
const SUBSCRIBERS = (process.env.BENCH_SUBSCRIBERS ?? '100,500').split(',').map(Number);
/** A fresh secret per run: the bench signs its own tokens (payments needs a caller). */
const JWT_SECRET = randomBytes(32).toString('base64url');

interface Row {
  name: string;
  target: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

const PRODUCTS = '/products?category=books&sort=price&order=desc&page=1&limit=10';

const NESTED_QUERY = JSON.stringify({
  query: '{ users { id name posts { id title author { id name } comments { id body author { name } } } } }',
});

async function load(
  name: string,
  url: string,
  init: { method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string> } = {},
): Promise<Row> {
  // A short warm-up so JIT, connection pools and query plans are hot before measuring.
  await autocannon({ url, connections: 10, duration: 1, ...init });
  const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, ...init });
  const errors = r.errors + r.timeouts + r.non2xx;
  return { name, target: url, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors };
}

/** Resident set size in MB from /proc (VmHWM is the kernel's own peak). */
function memOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

function startCeiling(port: number): Promise<ChildProcess> {
  const code = `require('node:http').createServer((q, s) => {
    s.writeHead(200, { 'content-type': 'application/json' }); s.end('{"message":"Halo Dunia!"}');
  }).listen(${port}, '127.0.0.1', () => process.send('ready'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((ok, fail) => {
    child.once('message', () => ok(child));
    child.once('exit', (c) => fail(new Error(`ceiling server exited with ${c}`)));
  });
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-bench-'));
  chmodSync(dataDir, 0o755); // the embedded PostgreSQL may run as user postgres
  const benchSchema = `bench_${process.pid}`;
  const started = Date.now();
  let system: RunningSystem | undefined;
  let ceiling: ChildProcess | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      env: {
        NODE_ENV: 'production',
        HALO_ENV: 'development',
        LOG_LEVEL: 'warn',
        // The nested query is deliberately heavy (three unbounded list levels: cost 2210 with the
        // default list size) and is measured engine for engine; the cost check still runs.
        GRAPHQL_MAX_COST: '5000',
        DATABASE_URL: process.env.DATABASE_URL,
        JWT_SECRET,
      },
      // Postgres mode works in a throwaway schema (dropped below); the embedded server in a temp directory.
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: Object.fromEntries(
        SERVICE_NAMES.map((name) => [name, { DB_SCHEMA: MODE === 'postgres' ? `${benchSchema}_${name}` : undefined }]),
      ),
      onLog: (name, line) => process.stderr.write(`${name}| ${line}\n`),
    });
    const readySecs = (Date.now() - started) / 1000;
    const log = (line: string) => process.stderr.write(`${line}\n`);
    let doc = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';

    if (runs('gateway')) {
      const ceilingPort = 4999 + PORT_OFFSET;
      ceiling = await startCeiling(ceilingPort);

      const gw = system.gatewayUrl;
      const content = system.processes.find((p) => p.name === 'content')!.url;
      const catalog = system.processes.find((p) => p.name === 'catalog')!.url;
      const idle = Object.fromEntries(system.processes.map((p) => [p.name, memOf(p.child.pid!).rss]));

      const gql = { method: 'POST' as const, body: NESTED_QUERY, headers: { 'content-type': 'application/json' } };
      const rows: Row[] = [];
      const run = async (name: string, url: string, init?: Parameters<typeof load>[2]) => {
        log(`bench: ${name} …`);
        rows.push(await load(name, url, init));
      };
      await run('raw node:http (ceiling)', `http://127.0.0.1:${ceilingPort}/hello`);
      await run('REST /hello direct', `${content}/hello`);
      await run('REST /hello via gateway', `${gw}/hello`);
      await run('REST /posts/2 direct', `${content}/posts/2`);
      await run('REST /posts/2 via gateway', `${gw}/posts/2`);
      await run('REST /products (filter+sort) direct', `${catalog}${PRODUCTS}`);
      await run('REST /products (filter+sort) via gateway', `${gw}${PRODUCTS}`);
      await run('GraphQL nested direct (subgraph)', `${content}/graphql`, gql);
      await run('GraphQL nested via gateway', `${gw}/graphql`, gql);

      const peaks = system.processes.map((p) => ({ name: p.name, idle: idle[p.name]!, peak: memOf(p.child.pid!).peak }));
      const section = render(rows, peaks, readySecs);
      process.stdout.write(section);
      doc = mergeSection(doc, MODE, section);
    }

    // Payments: the idempotency layer's cost, and replays against first calls.
    if (runs('payments')) {
      const paymentsSchema = MODE === 'postgres' ? `${benchSchema}_payments` : 'payments';
      const store = process.env.REDIS_URL ? 'redis' : 'memory';
      const paymentsSection = await benchPayments({
        withLayer: system.processes.find((p) => p.name === 'payments')!.url,
        env:
          MODE === 'postgres'
            ? { DATABASE_URL: process.env.DATABASE_URL, DB_SCHEMA: paymentsSchema }
            : { DATABASE_URL: system.postgres!.databaseUrls.payments },
        jwtSecret: JWT_SECRET,
        port: 4997 + PORT_OFFSET,
        durationS: DURATION_S,
        connections: CONNECTIONS,
        store,
        mode: MODE,
        log,
      });
      process.stdout.write(paymentsSection);
      doc = mergeSection(doc, `payments-${MODE}-${store}`, paymentsSection);
      if (process.env.REDIS_URL) await dropBenchKeys(process.env.REDIS_URL, paymentsSchema);
    }

    // Subscriptions: publish → receive latency through the gateway for many subscribers.
    if (runs('chat')) {
      const pubsub = process.env.REDIS_URL ? 'redis' : 'in-process';
      const chatSection = await benchFanout({
        gatewayUrl: system.gatewayUrl,
        jwtSecret: JWT_SECRET,
        subscriberCounts: SUBSCRIBERS,
        messages: Number(process.env.BENCH_MESSAGES ?? 50),
        intervalMs: 20,
        pubsub: `${pubsub} pub/sub, ${MODE === 'postgres' ? 'PostgreSQL' : 'embedded PostgreSQL'}`,
        log,
      });
      process.stdout.write(chatSection);
      doc = mergeSection(doc, `chat-${MODE}-${pubsub}`, chatSection);
    }

    writeFileSync(OUT, doc);
    log(`bench: wrote ${OUT}`);
  } finally {
    ceiling?.kill();
    await system?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    if (MODE === 'postgres') for (const name of SERVICE_NAMES) await dropSchema(`${benchSchema}_${name}`, process.env.DATABASE_URL!);
  }
}

/** The bench caller's idempotency records (they would otherwise stay for 24 h). */
async function dropBenchKeys(url: string, schema: string): Promise<void> {
  const redis = openRedis(url, createLogger('bench', 'silent'), { enableOfflineQueue: true });
  try {
    if (!(await redisReady(redis))) return;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `halo:${schema}:idem:{424242:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

function render(rows: Row[], mem: { name: string; idle: number; peak: number }[], readySecs: number): string {
  const by = (name: string) => rows.find((r) => r.name === name)!;
  const ratio = (a: string, b: string) => by(a).rps / by(b).rps;
  const ratios = [
    ['REST /hello: gateway ÷ direct', ratio('REST /hello via gateway', 'REST /hello direct'), '≥ 0.5'],
    ['REST /posts/2: gateway ÷ direct', ratio('REST /posts/2 via gateway', 'REST /posts/2 direct'), '≥ 0.5'],
    ['REST /products: gateway ÷ direct', ratio('REST /products (filter+sort) via gateway', 'REST /products (filter+sort) direct'), '≥ 0.5'],
    ['GraphQL nested: gateway ÷ subgraph', ratio('GraphQL nested via gateway', 'GraphQL nested direct (subgraph)'), '—'],
    ['REST /hello direct ÷ raw node:http', ratio('REST /hello direct', 'raw node:http (ceiling)'), '—'],
    ['REST /hello via gateway ÷ raw node:http', ratio('REST /hello via gateway', 'raw node:http (ceiling)'), '—'],
  ] as const;
  const cpu = cpus();
  const lines = [
    `## ${MODE === 'postgres' ? 'Production mode: PostgreSQL (`DATABASE_URL`)' : 'Embedded mode: one embedded PostgreSQL (`npm start` default)'}`,
    '',
    `- Command: \`${MODE === 'postgres' ? 'DATABASE_URL=postgres://… ' : ''}npm run bench\``,
    `- Date: ${new Date().toISOString()}`,
    `- Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}`,
    `- Load: ${CONNECTIONS} connections, ${DURATION_S} s per row after a 1 s warm-up; NODE_ENV=production, LOG_LEVEL=warn`,
    `- System ready ${readySecs.toFixed(1)} s after launch (built, data directory new)`,
    '',
    '### Ratios',
    '',
    '| ratio | value | goal |',
    '|---|---:|---|',
    ...ratios.map(([name, v, goal]) => `| ${name} | ${v.toFixed(2)}× | ${goal} |`),
    '',
    '### Throughput',
    '',
    '| path | req/s | p50 ms | p99 ms | errors |',
    '|---|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} |`),
    '',
    '### Memory (RSS)',
    '',
    '| process | idle MB (goal < 150) | peak MB under load (gateway goal < 300) |',
    '|---|---:|---:|',
    ...mem.map((m) => `| ${m.name} | ${m.idle.toFixed(0)} | ${m.peak.toFixed(0)} |`),
    '',
  ];
  return lines.join('\n');
}

const HEADER = `# Benchmarks

Produced by \`npm run bench\` (loadtest/src/bench.ts). Each section comes from ONE run on one
machine; compare ratios, not absolute numbers — the load generator (autocannon) shares the two
cores with Halo. Sections are rewritten by the run of their mode and kept otherwise.
`;

/** Replaces (or appends) this mode's section, keeping the other mode's last result. */
function mergeSection(doc: string, mode: string, section: string): string {
  const start = `<!-- bench:${mode} -->`;
  const end = `<!-- /bench:${mode} -->`;
  const block = `${start}\n${section}${end}\n`;
  const body = doc.startsWith('# Benchmarks') ? doc : HEADER;
  const i = body.indexOf(start);
  const j = body.indexOf(end);
  if (i !== -1 && j !== -1) return body.slice(0, i) + block + body.slice(j + end.length + 1);
  return `${body.trimEnd()}\n\n${block}`;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
