import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { SERVICE_NAMES } from '@halo/kit/config';
import { openRedis, redisReady } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { dropSchema } from '@halo/kit/testing';
import { startSystem, type RunningSystem } from '@halo/tools';
import { benchFanout, type FanoutKey } from './chat-bench';
import {
  BENCH_LOG_LEVEL,
  benchGateways,
  benchSystemEnv,
  QUERIES,
  REST_PATHS,
  startPeers,
  type GatewaysReport,
  type Peers,
  type Ratio,
} from './gateways-bench';
import { findK6, K6_MISSING, k6Driver } from './k6-driver';
import { callerAuthEnv } from './callers';
import { benchPayments, type PaymentsKey } from './payments-bench';
import { mergeSection } from './benchmarks-doc';
import { memOf, pin, pinServers, pinTree, planPinning, type Pinning } from './pin';
import { spread } from './rounds';

/**
 * `npm run bench`: ONE run, ONE summary table (loadtest/README.md). Starts Halo (embedded unless
 * DATABASE_URL, NODE_ENV=production, LOG_LEVEL=info as a production install) and, beside it, the
 * peers of the gateway comparison (src/gateways-bench.ts); pins the load generator (this process:
 * autocannon runs in it) to one CPU and every server process to another; then measures
 *
 * - the gateways (S1, S1c), REST through the gateway vs direct (S2) and the node:http ceiling, in
 *   paired rounds (src/rounds.ts) with the gateway's CPU per request (BENCH_ONLY=gateways);
 * - payments' idempotency layer (S3, src/payments-bench.ts; BENCH_ONLY=payments);
 * - subscription fan-out through the gateway (S5, src/chat-bench.ts; BENCH_ONLY=chat);
 *
 * and prints the summary, writes loadtest/results/gateways[-postgres].{json,md} and merges its
 * sections into docs/benchmarks.md. Server logs go to loadtest/results/logs/, never through this
 * process (that would charge the load generator's CPU for them).
 */
const ROOT = resolve(__dirname, '../..');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 15);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WARMUP_S = Number(process.env.BENCH_WARMUP ?? Math.min(5, DURATION_S));
const PORT_OFFSET = Number(process.env.BENCH_PORT_OFFSET ?? 200);
/** The secondary S1 table: the same queries asked by one caller on every connection (BENCH_ONE_CALLER=0 skips it). */
const ONE_CALLER = process.env.BENCH_ONE_CALLER !== '0' && process.env.BENCH_ONE_CALLER !== 'false';
/** Also Halo and Hive without in-flight dedupe, engine for engine with plain Apollo (S1). */
const NO_DEDUPE = process.env.BENCH_NO_DEDUPE === '1' || process.env.BENCH_NO_DEDUPE === 'true';
const OUT = resolve(ROOT, 'docs/benchmarks.md');
const RESULTS = resolve(ROOT, 'loadtest/results');
const LOGS = join(RESULTS, 'logs');
/** Which database the services run on; each mode keeps its own sections of docs/benchmarks.md. */
const MODE = process.env.DATABASE_URL ? 'postgres' : 'embedded';
/** `gateways`, `payments` or `chat`: only that scenario (and only its sections are rewritten). */
const ONLY = process.env.BENCH_ONLY === 'gateway' ? 'gateways' : process.env.BENCH_ONLY;
const runs = (scenario: 'gateways' | 'payments' | 'chat') => ONLY === undefined || ONLY === '' || ONLY === scenario;
/** Only these comparisons of the gateway scenario (e.g. `rest-post,rest-products`); a partial run leaves docs/benchmarks.md alone. */
const GROUPS = process.env.BENCH_GROUPS ? process.env.BENCH_GROUPS.split(',').map((s) => s.trim()) : undefined;
/** Subscribers per fan-out row (BENCH_SUBSCRIBERS=100,500). */
const SUBSCRIBERS = (process.env.BENCH_SUBSCRIBERS ?? '100,500').split(',').map(Number);
const LOG_LEVEL = BENCH_LOG_LEVEL;
/** The load generator of the gateway scenario: autocannon in this process, or k6 (src/k6-driver.ts; `npm run bench:k6`). */
const DRIVER = process.env.BENCH_DRIVER ?? 'autocannon';
if (DRIVER !== 'autocannon' && DRIVER !== 'k6') throw new Error(`BENCH_DRIVER must be autocannon or k6, not ${DRIVER}`);
const K6 = DRIVER === 'k6' ? findK6() : null;
if (DRIVER === 'k6' && !K6) throw new Error(K6_MISSING);
const DRIVER_TEXT = K6 ? `${K6.version}, one VU per connection, a child of the load generator's CPU` : 'autocannon';
/**
 * Plain Apollo twice: on its default fetcher and on Node's global fetch (src/peers/apollo.ts).
 * Neither is cheaper on every run, and the goal is against the best-configured one
 * (BENCH_APOLLO_FETCH=0: the default fetcher alone).
 */
const APOLLO_FETCH = process.env.BENCH_APOLLO_FETCH !== '0' && process.env.BENCH_APOLLO_FETCH !== 'false';
/** A fresh secret per run: the bench signs its own tokens. */
const JWT_SECRET = randomBytes(32).toString('base64url');
const KNOBS = [
  'BENCH_ONLY',
  'BENCH_GROUPS',
  'BENCH_ROUNDS',
  'BENCH_DURATION',
  'BENCH_WARMUP',
  'BENCH_CONNECTIONS',
  'BENCH_PORT_OFFSET',
  'BENCH_NO_DEDUPE',
  'BENCH_ONE_CALLER',
  'BENCH_SUBSCRIBERS',
  'BENCH_MESSAGES',
  'BENCH_FANOUT_CLIENT',
  'BENCH_DRIVER',
  'BENCH_APOLLO_FETCH',
];
const COMMAND = [
  ...KNOBS.filter((k) => process.env[k]).map((k) => `${k}=${process.env[k]}`),
  ...(process.env.REDIS_URL ? ['REDIS_URL=redis://…'] : []),
  ...(process.env.DATABASE_URL ? ['DATABASE_URL=postgres://…'] : []),
  'npm run bench',
].join(' ');

interface SummaryRow {
  scenario: string;
  measure: string;
  value: string;
  notes: string;
  goal: string;
  /** null: no goal. */
  met: boolean | null;
}

const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : '—');
const int = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '—' : String(Math.round(v)));
const range = (r: Ratio | undefined) => (r && r.spread.n ? `${x(r.spread.min)}–${x(r.spread.max)} (${r.spread.n} rounds)` : '—');

// eslint-disable-next-line max-lines-per-function -- one table, a row per goal in the order the README lists them
function summaryRows(
  g: GatewaysReport | undefined,
  pay: PaymentsKey | undefined,
  chat: FanoutKey | null | undefined,
  memory: MemoryRow[],
): SummaryRow[] {
  const rows: SummaryRow[] = [];
  if (g) {
    const ratioRow = (scenario: string, measure: string, key: string, goal?: { text: string; ok: (v: number) => boolean }): SummaryRow => {
      const r = g.ratios[key];
      const v = r?.spread.median ?? NaN;
      return {
        scenario,
        measure,
        value: x(v),
        notes: range(r),
        goal: goal?.text ?? '—',
        met: goal ? Number.isFinite(v) && goal.ok(v) : null,
      };
    };
    rows.push({
      scenario: 'ceiling',
      measure: 'raw node:http `/hello`, req/s (one interval)',
      value: int(g.ceiling.rps),
      notes: `p99 ${g.ceiling.p99} ms`,
      goal: '—',
      met: null,
    });
    for (const [q, scenario] of Object.entries(S1_NAMES)) {
      if (!g.perTarget[`${q}:halo`]) continue; // not measured (BENCH_GROUPS)
      rows.push(...s1Rows(g, q, `${scenario}, ${g.callers} distinct callers`, true));
    }
    const s1c = 'S1c anonymous public `products` (maxAge 60)';
    if (g.perTarget['products:halo'])
      rows.push(
        ratioRow(s1c, 'Halo with its response cache (32 MiB) ÷ Hive Gateway, req/s', 'products:halo-cache/hive', {
          text: '≥ 3',
          ok: (v) => v >= 3,
        }),
      );
    if (g.perTarget['products:halo']) rows.push(ratioRow(s1c, 'Halo, response cache off ÷ Hive Gateway, req/s', 'products:halo/hive'));
    for (const [id, path] of [
      ['rest-post', REST_PATHS.post],
      ['rest-products', REST_PATHS.products],
    ] as const) {
      if (!g.perTarget[`${id}:gateway`]) continue;
      const scenario = `S2 REST \`GET ${path}\``;
      rows.push(
        ratioRow(scenario, 'through the gateway ÷ direct to the service, req/s', `${id}:gateway/direct`, {
          text: '≥ 0.8',
          ok: (v) => v >= 0.8,
        }),
      );
      const perRound = g.rounds.map((r) => r[`${id}:gateway`]?.cpuUsPerRequest).filter((v): v is number => typeof v === 'number');
      const s = spread(perRound);
      rows.push({
        scenario,
        measure: 'gateway CPU µs per proxied request',
        value: int(s.median),
        notes: s.n ? `${int(s.min)}–${int(s.max)} (${s.n} rounds)` : '—',
        goal: '—',
        met: null,
      });
      if (id === 'rest-post' && g.perTarget[`${id}:nginx`]) rows.push(...nginxRows(g, scenario));
    }
  }
  if (pay) {
    rows.push({
      scenario: 'S3 payments idempotency',
      measure: 'first calls: with the layer ÷ without, req/s',
      value: x(pay.throughputRatio),
      notes: 'one interval each',
      goal: '≥ 0.85',
      met: pay.throughputRatio >= 0.85,
    });
    rows.push({
      scenario: 'S3 payments idempotency',
      measure: 'p50 added by the layer (1 connection)',
      value: `${pay.p50AddedMs >= 0 ? '+' : ''}${pay.p50AddedMs.toFixed(3)} ms`,
      notes: '',
      goal: '≤ 1 ms',
      met: pay.p50AddedMs <= 1,
    });
  }
  if (chat) {
    rows.push({
      scenario: 'S5 chat fan-out',
      measure: `publish → receive p95, ${chat.subscribers} subscribers, \`author { name }\``,
      value: `${chat.p95.toFixed(1)} ms, ${chat.lost} lost`,
      notes: '',
      goal: 'p95 < 25 ms, 0 lost',
      met: chat.p95 < 25 && chat.lost === 0,
    });
  }
  const gwMem = memory.find((m) => m.name === 'gateway');
  if (gwMem && (g || chat)) {
    const peers = memory.filter((m) =>
      ['gateway-cache', 'gateway-no-dedupe', 'hive', 'hive-rust', 'hive-no-dedupe', 'apollo'].includes(m.name),
    );
    rows.push({
      scenario: 'memory',
      measure: 'Halo gateway peak RSS under load (VmHWM, whole run)',
      value: `${int(gwMem.peak)} MB`,
      notes: peers.map((m) => `${m.name} ${int(m.peak)}`).join(', '),
      goal: '< 300 MB',
      met: gwMem.peak < 300,
    });
  }
  return rows;
}

const S1_NAMES = {
  me: 'S1 `me { orders { product user } }`',
  nested: 'S1 nested `users { posts { … comments } }`',
  flat: 'S1 flat `posts(first: 10)`',
};

/**
 * One S1 query's rows: Halo's req/s ÷ each peer's, and each gateway process's CPU per request with
 * Halo's ÷ plain Apollo's and ÷ Hive + Rust planner's, paired per round. Goals (issue 30) only on
 * the distinct-caller rows: req/s ≥ Hive's, CPU ≤ 0.5 × Apollo's and ≤ 0.35 × Hive + Rust's.
 */
function s1Rows(g: GatewaysReport, q: string, scenario: string, goals: boolean): SummaryRow[] {
  const rows: SummaryRow[] = [];
  const r = (key: string) => g.ratios[key];
  const median = (key: string) => r(key)?.spread.median ?? NaN;
  const ratioRow = (measure: string, key: string, goal?: { text: string; ok: (v: number) => boolean }): SummaryRow => ({
    scenario,
    measure,
    value: x(median(key)),
    notes: range(r(key)),
    goal: goals && goal ? goal.text : '—',
    met: goals && goal ? Number.isFinite(median(key)) && goal.ok(median(key)) : null,
  });
  rows.push(ratioRow('Halo ÷ Hive Gateway (defaults), req/s', `${q}:halo/hive`, { text: '≥ 1.0', ok: (v) => v >= 1 }));
  if (g.perTarget[`${q}:hive-rust`]) rows.push(ratioRow('Halo ÷ Hive Gateway + Rust query planner, req/s', `${q}:halo/hive-rust`));
  rows.push(ratioRow('Halo ÷ plain @apollo/gateway + Apollo Server 5, req/s', `${q}:halo/apollo`));
  const cpu = (t: string) => int(g.perTarget[`${q}:${t}`]?.cpuUsPerRequest);
  const fetchPeer = g.perTarget[`${q}:apollo-fetch`];
  rows.push({
    scenario,
    measure: `gateway CPU µs/request, Halo / Hive / Hive + Rust / Apollo${fetchPeer ? ' / Apollo on global fetch' : ''}`,
    value: `${cpu('halo')} / ${cpu('hive')} / ${cpu('hive-rust')} / ${cpu('apollo')}${fetchPeer ? ` / ${cpu('apollo-fetch')}` : ''}`,
    notes: 'each gateway process, same run',
    goal: '—',
    met: null,
  });
  // With both fetchers measured, the goal is judged once, against the cheaper (below).
  rows.push(
    ratioRow(
      'gateway CPU per request, Halo ÷ plain Apollo',
      `${q}:cpu:halo/apollo`,
      fetchPeer ? undefined : { text: '≤ 0.5', ok: (v) => v <= 0.5 },
    ),
  );
  const total = (t: string) => int(g.perTarget[`${q}:${t}`]?.totalCpuUsPerRequest);
  if (g.perTarget[`${q}:halo`]?.totalCpuUsPerRequest != null) {
    rows.push({
      scenario,
      // The machine's own PostgreSQL (DATABASE_URL) serves others too: counted only when embedded.
      measure: `total server CPU µs/request (gateway + subgraphs${MODE === 'embedded' ? ' + PostgreSQL' : ''}), Halo / Hive / Hive + Rust / Apollo${fetchPeer ? ' / Apollo on global fetch' : ''}`,
      value: `${total('halo')} / ${total('hive')} / ${total('hive-rust')} / ${total('apollo')}${fetchPeer ? ` / ${total('apollo-fetch')}` : ''}`,
      notes: 'what a user pays for, same run',
      goal: '—',
      met: null,
    });
    rows.push(ratioRow('total server CPU per request, Halo ÷ plain Apollo', `${q}:total:halo/apollo`));
  }
  if (g.perTarget[`${q}:hive-rust`])
    rows.push(
      ratioRow('gateway CPU per request, Halo ÷ Hive + Rust planner', `${q}:cpu:halo/hive-rust`, { text: '≤ 0.35', ok: (v) => v <= 0.35 }),
    );
  if (fetchPeer) {
    // The best-configured plain Apollo: whichever fetcher cost it less CPU per request in this run.
    const best =
      (fetchPeer.cpuUsPerRequest ?? Infinity) < (g.perTarget[`${q}:apollo`]?.cpuUsPerRequest ?? Infinity) ? 'apollo-fetch' : 'apollo';
    rows.push(
      ratioRow(
        `gateway CPU per request, Halo ÷ best-configured plain Apollo (${best === 'apollo' ? 'default fetcher' : 'global fetch'})`,
        `${q}:cpu:halo/${best}`,
        { text: '≤ 0.5', ok: (v) => v <= 0.5 },
      ),
    );
    rows.push(ratioRow('Halo ÷ plain Apollo on global fetch, req/s', `${q}:halo/apollo-fetch`));
    rows.push(ratioRow('gateway CPU per request, Halo ÷ plain Apollo on global fetch', `${q}:cpu:halo/apollo-fetch`));
    rows.push(ratioRow('gateway CPU per request, plain Apollo: default fetcher ÷ global fetch', `${q}:cpu:apollo/apollo-fetch`));
  }
  if (r(`${q}:halo-nodedupe/hive-nodedupe`)?.values.length) {
    rows.push(ratioRow('no in-flight dedupe: Halo ÷ Hive Gateway, req/s', `${q}:halo-nodedupe/hive-nodedupe`));
    rows.push(ratioRow('no in-flight dedupe: Halo ÷ plain Apollo, req/s', `${q}:halo-nodedupe/apollo`));
    rows.push(ratioRow('no in-flight dedupe: gateway CPU per request, Halo ÷ plain Apollo', `${q}:cpu:halo-nodedupe/apollo`));
  }
  return rows;
}

/** The secondary S1 table: the same queries by ONE caller on every connection (in-flight dedupe shares the work). */
function oneCallerRows(g: GatewaysReport): SummaryRow[] {
  const names: Record<string, string> = {
    'me-1caller': `${S1_NAMES.me}, one token on every connection`,
    'nested-1caller': `${S1_NAMES.nested}, anonymous, the same request on every connection`,
    'flat-1caller': `${S1_NAMES.flat}, anonymous, the same request on every connection`,
  };
  return Object.entries(names).flatMap(([q, scenario]) => (g.perTarget[`${q}:halo`] ? s1Rows(g, q, scenario, false) : []));
}

/** S2 against nginx (issue 30): its req/s ÷ direct, and the gateway's CPU per request ÷ nginx's, paired per round. */
function nginxRows(g: GatewaysReport, scenario: string): SummaryRow[] {
  const r = (key: string) => g.ratios[key];
  const median = (key: string) => r(key)?.spread.median ?? NaN;
  const cpu = median('rest-post:cpu:gateway/nginx');
  return [
    {
      scenario,
      measure: 'through nginx (1 worker) ÷ direct to the service, req/s',
      value: x(median('rest-post:nginx/direct')),
      notes: range(r('rest-post:nginx/direct')),
      goal: '—',
      met: null,
    },
    {
      scenario,
      measure: 'CPU µs per proxied request, gateway ÷ nginx',
      value: x(cpu),
      notes: `${int(g.perTarget['rest-post:gateway']?.cpuUsPerRequest)} / ${int(g.perTarget['rest-post:nginx']?.cpuUsPerRequest)} µs; ${range(r('rest-post:cpu:gateway/nginx'))}`,
      goal: '≤ 2',
      met: Number.isFinite(cpu) && cpu <= 2,
    },
    {
      scenario,
      measure: 'CPU µs per proxied request, node:http + undici alone ÷ nginx (the floor)',
      value: x(median('rest-post:cpu:floor/nginx')),
      notes: `${int(g.perTarget['rest-post:floor']?.cpuUsPerRequest)} / ${int(g.perTarget['rest-post:nginx']?.cpuUsPerRequest)} µs; ${range(r('rest-post:cpu:floor/nginx'))}`,
      goal: '—',
      met: null,
    },
    {
      scenario,
      measure: "CPU µs per proxied request, gateway ÷ the floor (what the gateway's edge rules cost)",
      value: x(median('rest-post:cpu:gateway/floor')),
      notes: range(r('rest-post:cpu:gateway/floor')),
      goal: '—',
      met: null,
    },
  ];
}

function renderSummary(rows: SummaryRow[]): string {
  return [
    '| scenario | measure | median | min–max / notes | goal | met |',
    '|---|---|---:|---|---|---|',
    ...rows.map(
      (r) => `| ${r.scenario} | ${r.measure} | ${r.value} | ${r.notes} | ${r.goal} | ${r.met === null ? '' : r.met ? 'yes' : '**no**'} |`,
    ),
    '',
  ].join('\n');
}

interface MemoryRow {
  name: string;
  pid: number;
  idle: number;
  peak: number;
}

interface RunInfo {
  started: Date;
  readySecs: number;
  pinning: Pinning;
  affinity: { name: string; pid: number; cpus: string }[];
  load: { start: number[]; end: number[] };
}

function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}`;
}

const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' / ');

/** How S1 is asked: distinct callers, and what the secondary one-caller table is. */
function callersText(g: GatewaysReport): string {
  return (
    `- Callers: the S1 rows are asked by ${g.callers} distinct users (registered and logged in through the gateway, 5 orders each),` +
    ' one token per connection, as real traffic has many callers: in-flight dedupe never crosses callers in any gateway, so' +
    ' none can share a fetch between connections. nested and flat are public queries, asked here as signed-in users too (an' +
    " app's feed is read by its signed-in users; anonymous identical requests could legitimately share fetches). The" +
    ' secondary table below asks the same queries as ONE caller on every connection (one token for `me`, anonymous nested' +
    " and flat): there Halo's and Hive's dedupe share most subgraph fetches among concurrent requests and plain Apollo has none" +
    (NO_DEDUPE
      ? '; the "no in-flight dedupe" rows compare the engines alone (a third Halo gateway with GRAPHQL_DEDUPE_INFLIGHT=false, a second Hive with `deduplicateInflightRequests: false`).'
      : ' (`BENCH_NO_DEDUPE=1` adds Halo and Hive without it).') +
    (ONE_CALLER ? '' : ' Skipped in this run (BENCH_ONE_CALLER=0).')
  );
}

function renderGatewaysSection(g: GatewaysReport, rows: SummaryRow[], memory: MemoryRow[], info: RunInfo, detailed: boolean): string {
  const targets = g.groups.flatMap((grp) => grp.targets.map((t) => ({ grp, t })));
  const lines = [
    `## Gateways compared, pinned and paired (${MODE === 'postgres' ? 'PostgreSQL' : 'embedded PostgreSQL'})`,
    '',
    `- Command: \`${COMMAND}\` (${info.started.toISOString()}); system ready ${info.readySecs.toFixed(1)} s after launch`,
    `- Machine: ${machine()}`,
    `- CPUs: ${info.pinning.describe}`,
    `- Load average (1 / 5 / 15 min) at the start of measuring: ${loadText(info.load.start)}; at the end: ${loadText(info.load.end)}`,
    `- Method: ${CONNECTIONS} closed-loop connections (${DRIVER_TEXT}); ${ROUNDS} rounds × ${DURATION_S} s per target, after a ${WARMUP_S} s warm-up of every target;` +
      ' the targets of a comparison back to back, their order rotated each round; each ratio is computed inside a round and the' +
      ' median of the per-round ratios is shown with their min–max. CPU per request: utime + stime of the gateway process' +
      ' (/proc/<pid>/stat, all threads) over the interval ÷ requests completed.',
    '- Every server: NODE_ENV=production, output to files (loadtest/results/logs/), not through the load generator.' +
      " Halo: LOG_LEVEL=info (a production install's level), GRAPHQL_MAX_COST=5000 (the nested query costs 2210 with the" +
      ' default list size; the cost check still runs), in-flight dedupe on (its default), response cache OFF' +
      ' (GRAPHQL_RESPONSE_CACHE_MIB=0) except for the second Halo gateway of S1c (its default 32 MiB), which has the same' +
      ' environment otherwise. Hive Gateway 2.12 (`@graphql-hive/gateway-runtime`, node:http): its defaults, in-flight' +
      ' dedupe of identical subgraph requests on (`deduplicateInflightRequests` of its HTTP transport), no usage reporting,' +
      ' `authorization` propagated to subgraphs; "Hive + Rust": the same with Hive Router\'s runtime (`@graphql-hive/router-runtime`' +
      ' 1.4, `unifiedGraphHandler`: the Rust query planner as a native addon and its executor). Plain Apollo: @apollo/gateway 2.14 + Apollo Server 5 standalone, keep-alive' +
      ' fetch, `authorization` forwarded, telemetry and reporting off. All on the same running subgraphs.',
    callersText(g),
    (g.perTarget['rest-post:nginx']
      ? "- S2 reference proxy: Debian's nginx, one worker (its CPU charged), `keepalive` upstream pool to content, access log on, on the servers' CPU (src/peers/nginx.ts).\n"
      : '- S2 reference proxy: nginx was not installed (`apt-get install -y nginx`), so its rows are missing.\n') +
      (g.perTarget['rest-post:floor']
        ? "- S2 floor: node:http's server and one undici pool to content, headers copied minus hop-by-hop and the answer streamed, nothing else (no request id, log, metrics, limits, CORS or routes: src/peers/node-floor.ts). What any proxy on Halo's platform costs before its own rules.\n"
        : '') +
      "- Halo checks the caller's JWT at the edge (and the subgraphs again); the peers only forward it to the subgraphs," +
      ' which verify it. `me { orders }`: each caller has ' +
      `${g.ordersOfCaller} orders (entity fetches to catalog and content); every answer (for every caller) was checked to be the same data without errors from every gateway before measuring.`,
    '',
    renderSummary(rows),
    ...(oneCallerRows(g).length
      ? [
          '### Secondary: one caller on every connection (in-flight dedupe shares the work; not real traffic)',
          '',
          renderSummary(oneCallerRows(g)),
        ]
      : []),
    '### Per target (medians over the rounds)',
    '',
    '| comparison | target | req/s | p50 ms | p99 ms | CPU µs/req (process) | failed requests (timed out), all rounds |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...targets.map(({ grp, t }) => {
      const p = g.perTarget[t.id]!;
      return `| ${grp.id} | ${t.label} | ${int(p.rps)} | ${p.p50} | ${p.p99} | ${int(p.cpuUsPerRequest)}${t.cpuOf ? ` (${t.cpuOf})` : ''} | ${p.errors}${p.timeouts ? ` (${p.timeouts})` : ''} |`;
    }),
    `| ceiling | raw node:http | ${int(g.ceiling.rps)} | ${g.ceiling.p50} | ${g.ceiling.p99} | ${int(g.ceiling.cpuUsPerRequest)} | ${g.ceiling.errors} |`,
    '',
    '### Memory (RSS MB)',
    '',
    '| process | after start | peak (VmHWM), whole run |',
    '|---|---:|---:|',
    ...memory.map((m) => `| ${m.name} | ${int(m.idle)} | ${int(m.peak)} |`),
    '',
  ];
  if (detailed) {
    lines.push(
      '### Per-round ratios',
      '',
      '| ratio | per round |',
      '|---|---|',
      ...Object.entries(g.ratios).map(([name, r]) => `| ${name} | ${r.values.map((v) => v.toFixed(3)).join(', ')} |`),
      '',
      '### Queries',
      '',
      ...Object.entries(QUERIES).map(([k, q]) => `- ${k}: \`${q}\``),
      '',
      '### CPU affinity of every process after pinning',
      '',
      ...info.affinity.map((a) => `- ${a.name} (pid ${a.pid}): CPU ${a.cpus}`),
      '',
    );
  } else {
    lines.push('Per-round ratios, queries and CPU affinities: `loadtest/results/' + resultsName() + '.md` (and `.json`).', '');
  }
  return lines.join('\n');
}

const resultsName = () => `gateways${MODE === 'postgres' ? '-postgres' : ''}${DRIVER === 'k6' ? '-k6' : ''}`;

// eslint-disable-next-line max-lines-per-function -- a benchmark script: its steps in the order they run
async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'halo-bench-'));
  chmodSync(dataDir, 0o755); // the embedded PostgreSQL may run as user postgres
  mkdirSync(LOGS, { recursive: true });
  const launcherLog = openSync(join(LOGS, 'launcher.log'), 'w');
  const benchSchema = `bench_${process.pid}`;
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const pinning = planPinning(K6 ? 'k6, a child of this process' : undefined);
  log(`bench: ${pinning.describe}`);
  // Until everything is started, this process sits on the servers' CPU: whatever it spawns
  // inherits that affinity from birth. Each server is pinned explicitly below anyway.
  if (pinning.enabled) pin(process.pid, pinning.serverCpu!);
  const started = new Date();
  let system: RunningSystem | undefined;
  let peers: Peers | undefined;
  try {
    system = await startSystem({
      portOffset: PORT_OFFSET,
      devOidc: false,
      env: { ...benchSystemEnv(JWT_SECRET), DATABASE_URL: process.env.DATABASE_URL },
      // Postgres mode works in a throwaway schema (dropped below); the embedded server in a temp directory.
      postgresDataDir: join(dataDir, 'postgres'),
      envFor: {
        ...Object.fromEntries(
          SERVICE_NAMES.map((name) => [name, { DB_SCHEMA: MODE === 'postgres' ? `${benchSchema}_${name}` : undefined }]),
        ),
        // S1 compares engines: the edge response cache only in S1c's second gateway.
        gateway: { GRAPHQL_RESPONSE_CACHE_MIB: '0' },
        // S1's distinct callers (one per connection) register from this one address; their tokens outlive the run.
        auth: { DB_SCHEMA: MODE === 'postgres' ? `${benchSchema}_auth` : undefined, ...callerAuthEnv(CONNECTIONS) },
      },
      logDir: LOGS,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
    const readySecs = (Date.now() - started.getTime()) / 1000;
    if (runs('gateways'))
      peers = await startPeers({
        system,
        portOffset: PORT_OFFSET,
        noDedupe: NO_DEDUPE,
        workDir: dataDir,
        logDir: LOGS,
        log,
        // REST comparisons alone need no GraphQL peer.
        graphql: !GROUPS || GROUPS.some((g) => !g.startsWith('rest-')),
        apolloGlobalFetch: APOLLO_FETCH,
      });

    const servers = [
      ...system.processes.map((p) => ({ name: p.replica ? `${p.name}-${p.replica}` : p.name, pid: p.child.pid! })),
      ...(peers?.all ?? []).map((p) => ({ name: p.name, pid: p.child.pid! })),
    ];
    const affinity: RunInfo['affinity'] = pinServers(pinning, [
      ...servers,
      ...(system.postgres ? [{ name: 'postgres', pid: system.postgres.child.pid! }] : []),
    ]);
    if (pinning.enabled) log(`bench: pinned ${affinity.length} processes (PostgreSQL's backends with their postmaster)`);
    const idle = new Map(servers.map((s) => [s.name, memOf(s.pid).rss]));
    const load = { start: loadavg(), end: [] as number[] };
    log(`bench: load average at start ${loadText(load.start)}`);
    let doc = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';

    let gateways: GatewaysReport | undefined;
    if (peers) {
      gateways = await benchGateways({
        system,
        peers,
        jwtSecret: JWT_SECRET,
        connections: CONNECTIONS,
        durationS: DURATION_S,
        rounds: ROUNDS,
        warmupS: WARMUP_S,
        log,
        only: GROUPS,
        oneCaller: ONE_CALLER,
        ...(K6 ? { driver: k6Driver(K6.bin, dataDir) } : {}),
      });
    }

    // Payments: the idempotency layer's cost, and replays against first calls.
    let payments: PaymentsKey | undefined;
    if (runs('payments')) {
      const paymentsSchema = MODE === 'postgres' ? `${benchSchema}_payments` : 'payments';
      const store = process.env.REDIS_URL ? 'redis' : 'memory';
      const { section, key } = await benchPayments({
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
        logLevel: LOG_LEVEL,
        ...(pinning.enabled ? { onSpawn: (pid: number) => pinTree(pid, pinning.serverCpu!) } : {}),
        pinning: pinning.describe,
      });
      payments = key;
      doc = mergeSection(doc, `payments-${MODE}-${store}`, section);
      if (process.env.REDIS_URL) await dropBenchKeys(process.env.REDIS_URL, paymentsSchema);
    }

    // Subscriptions: publish → receive latency through the gateway for many subscribers.
    let chat: FanoutKey | null | undefined;
    if (runs('chat')) {
      const pubsub = process.env.REDIS_URL ? 'redis' : 'in-process';
      const { section, key } = await benchFanout({
        gatewayUrl: system.gatewayUrl,
        jwtSecret: JWT_SECRET,
        subscriberCounts: SUBSCRIBERS,
        messages: Number(process.env.BENCH_MESSAGES ?? 50),
        intervalMs: 20,
        pubsub: `${pubsub} pub/sub, ${MODE === 'postgres' ? 'PostgreSQL' : 'embedded PostgreSQL'}`,
        log,
        pinning: pinning.describe,
        client: process.env.BENCH_FANOUT_CLIENT === 'graphql-ws' ? 'graphql-ws' : 'ws',
        gatewayPid: system.processes.find((p) => p.name === 'gateway')?.child.pid,
      });
      chat = key;
      doc = mergeSection(doc, `chat-${MODE}-${pubsub}`, section);
    }
    load.end = loadavg();
    log(`bench: load average at the end ${loadText(load.end)}`);

    const memory: MemoryRow[] = servers.map((s) => ({ name: s.name, pid: s.pid, idle: idle.get(s.name) ?? NaN, peak: memOf(s.pid).peak }));
    const rows = summaryRows(gateways, payments, chat, memory);
    const info: RunInfo = { started, readySecs, pinning, affinity, load };
    if (gateways) {
      writeFileSync(join(RESULTS, `${resultsName()}.md`), `${renderGatewaysSection(gateways, rows, memory, info, true)}`);
      writeFileSync(
        join(RESULTS, `${resultsName()}.json`),
        `${JSON.stringify(
          {
            command: COMMAND,
            date: started.toISOString(),
            machine: machine(),
            mode: MODE,
            config: {
              connections: CONNECTIONS,
              durationS: DURATION_S,
              rounds: ROUNDS,
              warmupS: WARMUP_S,
              portOffset: PORT_OFFSET,
              noDedupe: NO_DEDUPE,
            },
            pinning: { ...pinning, affinity },
            loadAverage: load,
            queries: QUERIES,
            restPaths: REST_PATHS,
            summary: rows,
            gateways,
            payments: payments ?? null,
            chat: chat ?? null,
            memory,
          },
          null,
          2,
        )}\n`,
      );
      if (GROUPS) log(`bench: BENCH_GROUPS=${GROUPS.join(',')}: a partial run, docs/benchmarks.md's gateway section left as it was`);
      else if (K6) log("bench: k6 drove this run: docs/benchmarks.md's gateway section (autocannon's) left as it was");
      else doc = mergeSection(doc, resultsName(), renderGatewaysSection(gateways, rows, memory, info, false), true);
      log(`bench: wrote ${relative(ROOT, join(RESULTS, resultsName()))}.{json,md}`);
    }
    writeFileSync(OUT, doc);
    log(`bench: wrote ${relative(ROOT, OUT)}`);
    const errors = gateways ? Object.values(gateways.perTarget).reduce((a, p) => a + p.errors, 0) + gateways.ceiling.errors : 0;
    process.stdout.write(
      [
        '',
        `${COMMAND} — ${machine()}`,
        `${pinning.describe}; load average ${loadText(load.start)} → ${loadText(load.end)}${errors ? `; ${errors} REQUEST ERRORS while measuring` : ''}`,
        '',
        renderSummary(rows),
        ...(gateways && oneCallerRows(gateways).length
          ? ['one caller on every connection (secondary):', '', renderSummary(oneCallerRows(gateways))]
          : []),
      ].join('\n'),
    );
  } finally {
    await peers?.stop();
    await system?.stop();
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
    if (MODE === 'postgres') for (const name of SERVICE_NAMES) await dropSchema(`${benchSchema}_${name}`, process.env.DATABASE_URL);
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

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
