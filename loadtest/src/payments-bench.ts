import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { generateServiceKey, signAccessToken } from '@halo/kit/auth';

/**
 * The payments scenario of `npm run bench` (issue: "payments with the idempotency layer vs the
 * same path without it, and replay latency vs first-call latency, as ratios in one run").
 *
 * Two payments processes on the same database: the system's own (with its idempotency store:
 * in-process in the embedded mode, Redis when REDIS_URL is set) and a second one started here
 * with `PAYMENTS_IDEMPOTENCY_STORE=none` (no lock, no stored response; the Postgres fence alone).
 * Both are loaded directly, not through the gateway, so only the layer differs. Throughput comes
 * from autocannon at BENCH_CONNECTIONS; latency from ONE connection in series (p50 under load is
 * mostly queueing, and the goal is "≤ 1 ms added p50 on loopback"). First calls each send a new
 * UUID key; replays repeat one key whose first call is done.
 */
const ROOT = resolve(__dirname, '../..');

export interface PaymentsBenchOptions {
  /** The system's payments base URL (its store as configured). */
  withLayer: string;
  /** The environment the second payments process needs: its database (URL and schema) and JWT secret. */
  env: Record<string, string | undefined>;
  jwtSecret: string;
  port: number;
  durationS: number;
  connections: number;
  /** What the system's payments uses: `memory` or `redis`. */
  store: string;
  /** The database: `embedded` or `postgres` (DATABASE_URL). */
  mode: string;
  log: (line: string) => void;
  /** The system's LOG_LEVEL, so both payments processes log alike (default warn). */
  logLevel?: string;
  /** Called with the pid of the extra payments process as soon as it is spawned (CPU pinning). */
  onSpawn?: (pid: number) => void;
  /** One line on how load generator and servers shared the CPUs, for the section. */
  pinning?: string;
}

/** The figures the summary table of `npm run bench` shows. */
export interface PaymentsKey {
  /** First calls: throughput with the idempotency layer ÷ without. */
  throughputRatio: number;
  /** First calls over one connection: p50 with the layer minus without, ms. */
  p50AddedMs: number;
}

interface ThroughputRow {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

interface LatencyRow {
  name: string;
  n: number;
  p50: number;
  p99: number;
  mean: number;
}

const PATH = '/api/payments';
const BODY = JSON.stringify({ amount: 12.5 });

/** Starts payments without the idempotency layer (refused in production; the bench runs development). */
async function startWithoutLayer(opts: PaymentsBenchOptions): Promise<ChildProcess> {
  const child = spawn(process.execPath, [resolve(ROOT, 'services/payments/dist/main.js')], {
    env: {
      ...process.env,
      ...opts.env,
      NODE_ENV: 'production',
      HALO_ENV: 'development',
      // The system's own payments logs at this level too: only the layer may differ.
      LOG_LEVEL: opts.logLevel ?? 'warn',
      SEED_DEMO_DATA: 'false',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(opts.port),
      GRPC_PORT: '0',
      JWT_SECRET: opts.jwtSecret,
      PAYMENTS_IDEMPOTENCY_STORE: 'none',
      // payments calls catalog in the topology, so it needs a key; this path never calls catalog.
      SERVICE_SIGNING_KEY: JSON.stringify(generateServiceKey('payments', 'bench').privateJwk),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (child.pid !== undefined) opts.onSpawn?.(child.pid);
  const base = `http://127.0.0.1:${opts.port}`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`payments (no idempotency layer) exited with ${child.exitCode}`);
    const ok = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('payments (no idempotency layer) was not ready within 20 s');
}

function headers(token: string, key?: string): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(key ? { 'idempotency-key': key } : {}) };
}

async function throughput(
  name: string,
  base: string,
  token: string,
  key: string | null,
  opts: PaymentsBenchOptions,
): Promise<ThroughputRow> {
  const req = {
    method: 'POST' as const,
    path: PATH,
    headers: headers(token, key ?? 'set-per-request'),
    body: BODY,
    // A first call needs a new key every time; a replay repeats one.
    ...(key ? {} : { setupRequest: (r: autocannon.Request) => ({ ...r, headers: { ...r.headers, 'idempotency-key': randomUUID() } }) }),
  };
  const run = (duration: number, connections: number) => autocannon({ url: base, connections, duration, requests: [req] });
  await run(1, 10);
  const r = await run(opts.durationS, opts.connections);
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.non2xx /* errors include timeouts */,
  };
}

/** One keep-alive connection, one request after another, timed with hrtime. */
async function latency(name: string, base: string, token: string, key: string | null, durationS: number): Promise<LatencyRow> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL(`${base}${PATH}`);
  const once = () =>
    new Promise<number>((done, fail) => {
      const started = process.hrtime.bigint();
      const req = request(url, { method: 'POST', agent, headers: headers(token, key ?? randomUUID()) }, (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 201 ? done(Number(process.hrtime.bigint() - started) / 1e6) : fail(new Error(`status ${res.statusCode}`)),
        );
      });
      req.on('error', fail);
      req.end(BODY);
    });
  for (let i = 0; i < 200; i++) await once(); // warm-up
  const samples: number[] = [];
  const until = Date.now() + durationS * 1000;
  while (Date.now() < until) samples.push(await once());
  agent.destroy();
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { name, n: samples.length, p50: at(0.5), p99: at(0.99), mean: samples.reduce((a, b) => a + b, 0) / samples.length };
}

export async function benchPayments(opts: PaymentsBenchOptions): Promise<{ section: string; key: PaymentsKey }> {
  const token = signAccessToken({ sub: '424242', name: 'bench', role: 'user' }, opts.jwtSecret, 3600);
  const without = await startWithoutLayer(opts);
  const withoutBase = `http://127.0.0.1:${opts.port}`;
  try {
    // One completed key per process, for the replays.
    const replayKeys = { with: randomUUID(), without: randomUUID() };
    for (const [base, key] of [
      [opts.withLayer, replayKeys.with],
      [withoutBase, replayKeys.without],
    ] as const) {
      const res = await fetch(`${base}${PATH}`, { method: 'POST', headers: headers(token, key), body: BODY });
      if (res.status !== 201) throw new Error(`payments answered ${res.status} to the first call: ${await res.text()}`);
    }
    const layer = `idempotency layer (${opts.store})`;
    const t: ThroughputRow[] = [];
    const l: LatencyRow[] = [];
    const step = async <T>(what: string, fn: () => Promise<T>, into: T[]) => {
      opts.log(`bench: payments ${what} …`);
      into.push(await fn());
    };
    await step(`first call, ${layer}`, () => throughput(`first call, ${layer}`, opts.withLayer, token, null, opts), t);
    await step('first call, no idempotency layer', () => throughput('first call, no idempotency layer', withoutBase, token, null, opts), t);
    await step(`replay, ${layer}`, () => throughput(`replay, ${layer}`, opts.withLayer, token, replayKeys.with, opts), t);
    await step(
      'replay from the database fence, no layer',
      () => throughput('replay from the database fence, no layer', withoutBase, token, replayKeys.without, opts),
      t,
    );
    await step(
      `first call, ${layer} (1 connection)`,
      () => latency(`first call, ${layer}`, opts.withLayer, token, null, opts.durationS),
      l,
    );
    await step(
      'first call, no layer (1 connection)',
      () => latency('first call, no idempotency layer', withoutBase, token, null, opts.durationS),
      l,
    );
    await step(
      `replay, ${layer} (1 connection)`,
      () => latency(`replay, ${layer}`, opts.withLayer, token, replayKeys.with, opts.durationS),
      l,
    );
    return {
      section: render(t, l, opts),
      key: { throughputRatio: t[0]!.rps / t[1]!.rps, p50AddedMs: l[0]!.p50 - l[1]!.p50 },
    };
  } finally {
    without.kill('SIGTERM');
    await new Promise((r) => without.once('exit', r));
  }
}

function render(t: ThroughputRow[], l: LatencyRow[], opts: PaymentsBenchOptions): string {
  const [firstWith, firstWithout, replayWith] = t;
  const [latWith, latWithout, latReplay] = l;
  const ms = (v: number) => v.toFixed(3);
  const ratios: [string, string, string][] = [
    ['first call: with layer ÷ without, throughput', `${(firstWith!.rps / firstWithout!.rps).toFixed(2)}×`, '≥ 0.85'],
    [
      'first call: p50 added by the layer (1 connection)',
      `${latWith!.p50 - latWithout!.p50 >= 0 ? '+' : ''}${ms(latWith!.p50 - latWithout!.p50)} ms`,
      '≤ 1 ms',
    ],
    ['replay ÷ first call, p50 latency (1 connection)', `${(latReplay!.p50 / latWith!.p50).toFixed(2)}×`, '—'],
    ['replay ÷ first call, throughput', `${(replayWith!.rps / firstWith!.rps).toFixed(2)}×`, '—'],
  ];
  return [
    `## Payments: the idempotency layer (${opts.store} store, ${opts.mode === 'postgres' ? 'PostgreSQL' : 'embedded PostgreSQL'})`,
    '',
    `- Command: \`${opts.store === 'redis' ? 'REDIS_URL=redis://… ' : ''}${opts.mode === 'postgres' ? 'DATABASE_URL=postgres://… ' : ''}npm run bench\` (\`BENCH_ONLY=payments\` runs this section alone)`,
    `- Date: ${new Date().toISOString()}`,
    `- POST /api/payments \`{"amount":12.5}\` straight to payments (no gateway), simulated processor without latency. Throughput:`,
    `  ${opts.connections} connections, ${opts.durationS} s per row after a 1 s warm-up; latency: one keep-alive connection in series,`,
    `  ${opts.durationS} s per row after 200 warm-up requests. "No layer" is a second payments process with`,
    '  `PAYMENTS_IDEMPOTENCY_STORE=none` on the same database (the Postgres fence alone).',
    ...(opts.pinning ? [`- CPUs: ${opts.pinning}`] : []),
    '',
    '### Ratios',
    '',
    '| ratio | value | goal |',
    '|---|---:|---|',
    ...ratios.map(([name, v, goal]) => `| ${name} | ${v} | ${goal} |`),
    '',
    '### Throughput',
    '',
    '| POST /api/payments | req/s | p50 ms | p99 ms | errors |',
    '|---|---:|---:|---:|---:|',
    ...t.map((r) => `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.errors} |`),
    '',
    '### Latency, one connection',
    '',
    '| POST /api/payments | requests | p50 ms | p99 ms | mean ms |',
    '|---|---:|---:|---:|---:|',
    ...l.map((r) => `| ${r.name} | ${r.n} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.mean)} |`),
    '',
  ].join('\n');
}
