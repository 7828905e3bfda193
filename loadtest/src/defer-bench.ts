import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import { startBenchSystem } from './bench-system';
import { mergeSection } from './benchmarks-doc';
import { callerAuthEnv, registerCallers, type Caller } from './callers';
import { cpuMicros } from './pin';
import { median } from './rounds';

/**
 * `npm run bench:defer` (loadtest/README.md): what `@defer` buys a screen. The same query, its
 * slow part deferred or not — `me { id name ... @defer { orders { id product { name price } user {
 * name } } } }`: the primary part is auth + content, the deferred one adds payments, catalog and
 * content again — sent by BENCH_CONNECTIONS (10) distinct callers in a closed loop, BENCH_ROUNDS
 * (5) rounds × BENCH_DURATION (10) s per shape, the shapes alternating. Per shape: the time to the
 * first part (a screen can render) and to the last, p50 and p99, req/s, and the gateway's CPU per
 * request. Pinned as `npm run bench`; the deferred answer, assembled, is checked equal to the
 * whole one first. A figure, not a test.
 */
const ROOT = resolve(__dirname, '../..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 1790);
const OUT = resolve(ROOT, 'docs/benchmarks.md');
const JWT_SECRET = randomBytes(32).toString('base64url');
const log = (line: string) => process.stderr.write(`${line}\n`);

const DEFERRED = 'query Me { me { id name ... @defer { orders { id product { name price } user { name } } } } }';
const WHOLE = DEFERRED.replace(' ... @defer {', ' ... {');
const ACCEPT = 'multipart/mixed;deferSpec=20220824, application/json';

interface Timing {
  first: number;
  last: number;
}

/** One request: ms to the first part complete (the whole answer when it is not in parts) and to the end. */
async function once(url: string, agent: Agent, query: string, token: string): Promise<Timing> {
  const started = performance.now();
  const res = await request(`${url}/graphql`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', accept: ACCEPT, authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  if (res.statusCode !== 200) throw new Error(`${res.statusCode}: ${await res.body.text()}`);
  const multipart = String(res.headers['content-type']).startsWith('multipart/');
  let text = '';
  let first = NaN;
  for await (const chunk of res.body) {
    text += (chunk as Buffer).toString();
    // The first part is complete once the delimiter after its JSON has arrived.
    if (Number.isNaN(first) && (!multipart || text.indexOf('\r\n---', 3) !== -1)) first = performance.now() - started;
  }
  const last = performance.now() - started;
  return { first: multipart ? first : last, last };
}

/** Parts assembled as a client does (items merged at their paths). */
function assembled(text: string): unknown {
  const parts = text
    .split('\r\n---')
    .map((p) => p.slice(p.indexOf('\r\n\r\n') + 4).trim())
    .filter((p) => p.startsWith('{'))
    .map(
      (p) =>
        JSON.parse(p) as { data?: Record<string, unknown>; incremental?: { data: Record<string, unknown>; path: (string | number)[] }[] },
    );
  const data = parts[0]!.data!;
  for (const p of parts.slice(1)) {
    for (const item of p.incremental ?? []) {
      let target: Record<string | number, unknown> = data;
      for (const key of item.path) target = target[key] as Record<string | number, unknown>;
      Object.assign(target, item.data);
    }
  }
  return { data };
}

interface ShapeRound {
  requests: number;
  first: number[];
  last: number[];
  cpuUs: number;
}

/** A closed loop of one request at a time per caller, for `seconds`. */
async function run(
  url: string,
  agents: Agent[],
  callers: Caller[],
  query: string,
  seconds: number,
  gatewayPid: number,
): Promise<ShapeRound> {
  const until = performance.now() + seconds * 1000;
  const first: number[] = [];
  const last: number[] = [];
  const cpuBefore = cpuMicros(gatewayPid);
  await Promise.all(
    callers.map(async (caller, i) => {
      while (performance.now() < until) {
        const t = await once(url, agents[i]!, query, caller.token);
        first.push(t.first);
        last.push(t.last);
      }
    }),
  );
  return { requests: first.length, first, last, cpuUs: (cpuMicros(gatewayPid) - cpuBefore) / first.length };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

async function main(): Promise<void> {
  const bench = await startBenchSystem({
    name: 'defer',
    portOffset: PORT_OFFSET,
    jwtSecret: JWT_SECRET,
    logDir: join(ROOT, 'loadtest/results/logs/defer'),
    envFor: { auth: callerAuthEnv(CONNECTIONS) },
    generator: 'this process, undici',
    log,
  });
  const agents = Array.from({ length: CONNECTIONS }, () => new Agent({ connections: 1 }));
  try {
    bench.pinAll();
    const url = bench.system.gatewayUrl;
    const gatewayPid = bench.system.processes.find((p) => p.name === 'gateway')!.child.pid!;
    const callers = await registerCallers(url, CONNECTIONS, log, 'bench:defer');
    // The same answer either way, once assembled.
    const ask = async (query: string, accept: string) =>
      (
        await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${callers[0]!.token}` },
          body: JSON.stringify({ query }),
        })
      ).text();
    const whole = JSON.parse(await ask(WHOLE, 'application/json')) as unknown;
    const parts = assembled(await ask(DEFERRED, ACCEPT));
    if (JSON.stringify(parts) !== JSON.stringify(whole))
      throw new Error(`the parts assemble to ${JSON.stringify(parts)}, not ${JSON.stringify(whole)}`);
    log('bench:defer: the deferred answer assembles to the whole one');
    for (const q of [WHOLE, DEFERRED]) await run(url, agents, callers, q, Math.min(5, DURATION_S), gatewayPid);
    const rounds: { whole: ShapeRound; deferred: ShapeRound }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? (['whole', 'deferred'] as const) : (['deferred', 'whole'] as const);
      const round = {} as { whole: ShapeRound; deferred: ShapeRound };
      for (const shape of order)
        round[shape] = await run(url, agents, callers, shape === 'whole' ? WHOLE : DEFERRED, DURATION_S, gatewayPid);
      rounds.push(round);
      log(
        `bench:defer: round ${r + 1}/${ROUNDS}: first part p50 ${pct(round.deferred.first, 50).toFixed(1)} ms (whole ${pct(round.whole.last, 50).toFixed(1)} ms), ` +
          `last ${pct(round.deferred.last, 50).toFixed(1)} ms`,
      );
    }
    const section = render(rounds, bench.pinning.describe);
    process.stdout.write(`${section}\n`);
    writeFileSync(OUT, mergeSection(existsSync(OUT) ? readFileSync(OUT, 'utf8') : '', 'defer', section));
  } finally {
    await Promise.all(agents.map((a) => a.close()));
    await bench.stop();
  }
}

function render(rounds: { whole: ShapeRound; deferred: ShapeRound }[], pinning: string): string {
  const m = (of: (r: { whole: ShapeRound; deferred: ShapeRound }) => number) => median(rounds.map(of));
  const ratio = (of: (r: { whole: ShapeRound; deferred: ShapeRound }) => number) => m(of).toFixed(2);
  const row = (name: string, s: 'whole' | 'deferred') =>
    `| ${name} | ${m((r) => pct(r[s].first, 50)).toFixed(1)} | ${m((r) => pct(r[s].first, 99)).toFixed(1)} | ${m((r) => pct(r[s].last, 50)).toFixed(1)} | ${m((r) => pct(r[s].last, 99)).toFixed(1)} | ${m((r) => r[s].requests / DURATION_S).toFixed(0)} | ${m((r) => r[s].cpuUs).toFixed(0)} |`;
  return `## \`@defer\`: time to the first part (\`npm run bench:defer\`)

- Query: \`${DEFERRED}\` against the same without \`@defer\` (the orders fetched by payments, catalog and content, the rest by auth and content)
- ${CONNECTIONS} distinct callers in a closed loop; ${ROUNDS} rounds × ${DURATION_S} s per shape, alternating; medians over the rounds
- Date: ${new Date().toISOString()}; CPUs: ${pinning}; embedded PostgreSQL, NODE_ENV=production, LOG_LEVEL=info

| shape | first part p50 ms | first part p99 ms | whole answer p50 ms | whole answer p99 ms | req/s | gateway CPU µs/req |
|---|---:|---:|---:|---:|---:|---:|
${row('sent whole', 'whole')}
${row('`@defer` on the orders', 'deferred')}

Paired per round: first part (deferred) ÷ whole answer (not deferred), p50: ${ratio((r) => pct(r.deferred.first, 50) / pct(r.whole.last, 50))}×;
whole answer deferred ÷ not, p50: ${ratio((r) => pct(r.deferred.last, 50) / pct(r.whole.last, 50))}×; gateway CPU per request deferred ÷ not:
${ratio((r) => r.deferred.cpuUs / r.whole.cpuUs)}× (each part runs as its own operation: the fields on the way to the deferred one are fetched again).
`;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:defer failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
