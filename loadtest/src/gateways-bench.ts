import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { signAccessToken } from '@halo/kit/auth';
import { isEdgeService } from '@halo/kit/config';
import type { RunningSystem } from '@halo/tools';
import { ensureOrders, registerCallers, type Caller } from './callers';
import { nginxIfInstalled, type NginxPeer } from './peers/nginx';
import { perConnectionHeaders } from './per-connection';
import { cpuMicros, descendants, nodeFlagsOf } from './pin';
import { pairedRatios, perRound, runRounds, spread, type Group, type RoundSamples, type Sample, type Spread } from './rounds';

/**
 * The gateway comparison of `npm run bench` (issue 12): Halo's gateway against Hive Gateway and a
 * plain @apollo/gateway + Apollo Server 5 on the same running subgraphs (S1, S1c), REST through
 * the gateway against the service directly (S2), with the raw node:http ceiling, measured in
 * paired rounds (src/rounds.ts) with the gateway process's CPU per request from /proc.
 *
 * Extra processes started here, beside the system: the ceiling server, Hive Gateway twice
 * (src/peers/hive.ts: its default stitching runtime, and Hive Router's runtime with the Rust query
 * planner, `@graphql-hive/router-runtime`), plain Apollo (src/peers/apollo.ts) and a second Halo gateway with its edge
 * response cache at the default size (the system's own runs with GRAPHQL_RESPONSE_CACHE_MIB=0):
 * same environment, copied from the running gateway's /proc/<pid>/environ, another port. With
 * BENCH_NO_DEDUPE=1 also Hive and Halo each without in-flight dedupe, for the engine-for-engine
 * comparison with plain Apollo (which has none).
 *
 * The S1 rows (me, nested, flat) are asked by distinct callers: N users registered and logged in
 * through the gateway (src/callers.ts), one token per connection, so no gateway can share a fetch
 * between two connections, as with real traffic. The `-1caller` rows ask the same queries as one
 * caller on every connection (one token for `me`, anonymous nested and flat): there in-flight
 * dedupe shares most subgraph fetches among concurrent requests; a secondary table, labelled so.
 */
const ROOT = resolve(__dirname, '../..');

/** What a production install uses (the chart's default); every Halo process of a bench logs at it. */
export const BENCH_LOG_LEVEL = 'info';

/** The environment of every Halo process a bench starts (src/bench.ts, src/ab-bench.ts): production mode, demo data. */
export function benchSystemEnv(jwtSecret: string): Record<string, string> {
  return {
    NODE_ENV: 'production',
    HALO_ENV: 'development',
    LOG_LEVEL: BENCH_LOG_LEVEL,
    // The nested query is deliberately heavy (three unbounded list levels: cost 2210 with the
    // default list size) and is measured engine for engine; the cost check still runs.
    GRAPHQL_MAX_COST: '5000',
    JWT_SECRET: jwtSecret,
    // The compiled entries a production image runs, not `npm start`'s start-up bundles (ADR 0010).
    HALO_BUNDLES: '0',
  };
}
const SUPERGRAPH = resolve(ROOT, 'gateway/supergraph.graphql');

export interface ExtraProcess {
  name: string;
  url: string;
  child: ChildProcess;
}

export interface Peers {
  ceiling: ExtraProcess;
  /** The GraphQL peers (S1, S1c): absent when only REST comparisons run (`graphql: false`). */
  graphql?: { hive: ExtraProcess; hiveRust: ExtraProcess; apollo: ExtraProcess; haloCache: ExtraProcess };
  /** Plain Apollo with Node's global fetch as its subgraph fetcher (`apolloGlobalFetch`). */
  apolloFetch?: ExtraProcess;
  hiveNoDedupe?: ExtraProcess;
  haloNoDedupe?: ExtraProcess;
  /** nginx in front of content (S2's reference proxy); absent when nginx is not installed. */
  nginx?: NginxPeer;
  /** The floor under a Node proxy (src/peers/node-floor.ts) in front of content: S2's third reference. */
  floor: ExtraProcess;
  all: ExtraProcess[];
  stop(): Promise<void>;
}

export interface PeersOptions {
  system: RunningSystem;
  portOffset: number;
  /** Also Hive and Halo without in-flight dedupe. */
  noDedupe: boolean;
  /** Start the GraphQL peers (Hive, Apollo, the cached Halo); false when only REST is compared. */
  graphql?: boolean;
  /** Also plain Apollo on Node's global fetch instead of its default fetcher (src/peers/apollo.ts). */
  apolloGlobalFetch?: boolean;
  /** Rewritten supergraph goes here. */
  workDir: string;
  /** Every extra process writes its output to `<logDir>/<name>.log`. */
  logDir: string;
  log?: (line: string) => void;
}

/** The committed supergraph with each subgraph's URL pointing at the running service. */
export function rewriteSupergraph(sdl: string, serviceUrls: Record<string, string>): string {
  const seen = new Set<string>();
  const out = sdl.replace(/@join__graph\(name: "([^"]+)", url: "([^"]*)"\)/g, (whole, name: string) => {
    const base = serviceUrls[name];
    if (!base) return whole;
    seen.add(name);
    return `@join__graph(name: "${name}", url: "${base}/graphql")`;
  });
  const missing = Object.keys(serviceUrls).filter((n) => !seen.has(n));
  if (missing.length) throw new Error(`supergraph has no @join__graph for ${missing.join(', ')}`);
  return out;
}

/** `node <args>` with its output in `<logDir>/<name>.log`, run from `cwd` (this checkout by default). */
export function spawnLogged(
  name: string,
  args: string[],
  env: Record<string, string | undefined>,
  logDir: string,
  cwd = ROOT,
): ChildProcess {
  const fd = openSync(join(logDir, `${name}.log`), 'w');
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return child;
}

export async function waitFor(proc: ExtraProcess, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) while starting; see its log`);
    }
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${proc.name} was not ready within ${timeoutMs} ms`);
}

/** SIGTERM to each (SIGKILL after 10 s); resolves when all have exited. */
export async function stopChildren(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(kill);
            done();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

const graphqlReady = (url: string) => async () =>
  (await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' }))
    .ok;

/**
 * Set by Node for a child with an IPC channel (the launcher's children have one): copied into a
 * process started without that channel, they make Node open "IPC" on whatever fd 3 then is (its
 * own event loop's), so the copy would not run as the original does.
 */
const IPC_ENV = new Set(['NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE', 'NODE_UNIQUE_ID']);

/** The environment a process runs with, from /proc (NUL-separated KEY=value), for a copy of it: no IPC channel. */
export function environOf(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = entry.indexOf('=');
    if (i > 0 && !IPC_ENV.has(entry.slice(0, i))) env[entry.slice(0, i)] = entry.slice(i + 1);
  }
  return env;
}

// eslint-disable-next-line max-lines-per-function -- the peers' start-up, one after the other, in port order
export async function startPeers(opts: PeersOptions): Promise<Peers> {
  const { system, portOffset, logDir } = opts;
  const services = Object.fromEntries(
    // The subgraphs: every service the gateway routes to (not the registry, the gateway, the dev OIDC provider).
    system.processes.filter((p) => isEdgeService(p.name) && !p.replica).map((p) => [p.name, p.url]),
  );
  const supergraphFile = join(opts.workDir, 'supergraph.bench.graphql');
  writeFileSync(supergraphFile, rewriteSupergraph(readFileSync(SUPERGRAPH, 'utf8'), services));
  const gateway = system.processes.find((p) => p.name === 'gateway')!;
  const base = { PATH: process.env.PATH, NODE_ENV: 'production', APOLLO_TELEMETRY_DISABLED: 'true', SUPERGRAPH_FILE: supergraphFile };
  const started: ExtraProcess[] = [];
  const stop = () => stopChildren(started.map((p) => p.child));
  const add = (name: string, port: number, args: string[], env: Record<string, string | undefined>) => {
    const proc = { name, url: `http://127.0.0.1:${port}`, child: spawnLogged(name, args, env, logDir) };
    started.push(proc);
    return proc;
  };
  try {
    const ceilingPort = 4999 + portOffset;
    const ceiling = add(
      'ceiling',
      ceilingPort,
      [
        '-e',
        `require('node:http').createServer((q, s) => {
          s.writeHead(200, { 'content-type': 'application/json' }); s.end('{"message":"Halo Dunia!"}');
        }).listen(${ceilingPort}, '127.0.0.1');`,
      ],
      { PATH: process.env.PATH, NODE_ENV: 'production' },
    );
    const graphql = opts.graphql ?? true;
    const hivePort = 4990 + portOffset;
    const hive = graphql && add('hive', hivePort, [resolve(__dirname, 'peers/hive.js')], { ...base, PORT: String(hivePort) });
    const hiveNoDedupe =
      graphql && opts.noDedupe
        ? add('hive-no-dedupe', 4991 + portOffset, [resolve(__dirname, 'peers/hive.js')], {
            ...base,
            PORT: String(4991 + portOffset),
            HIVE_DEDUPE: 'false',
          })
        : undefined;
    // Hive Gateway on Hive Router's runtime (the Rust query planner), otherwise the same.
    const hiveRust =
      graphql &&
      add('hive-rust', 4995 + portOffset, [resolve(__dirname, 'peers/hive.js')], {
        ...base,
        PORT: String(4995 + portOffset),
        HIVE_ROUTER_RUNTIME: 'true',
      });
    const apollo =
      graphql && add('apollo', 4992 + portOffset, [resolve(__dirname, 'peers/apollo.js')], { ...base, PORT: String(4992 + portOffset) });
    const apolloFetch =
      graphql &&
      opts.apolloGlobalFetch &&
      add('apollo-fetch', 4996 + portOffset, [resolve(__dirname, 'peers/apollo.js')], {
        ...base,
        PORT: String(4996 + portOffset),
        APOLLO_FETCHER: 'fetch',
      });
    // Halo's gateway as the system runs it, but with the response cache at its default size.
    const haloEnv: Record<string, string | undefined> = {
      ...environOf(gateway.child.pid!),
      HTTP_PORT: String(4993 + portOffset),
      METRICS_PORT: '0',
    };
    delete haloEnv.GRAPHQL_RESPONSE_CACHE_MIB;
    // With the V8 flags the launcher gave the measured gateway (its heap growth), so only the option differs.
    const gatewayArgs = [...nodeFlagsOf(gateway.child.pid!), resolve(ROOT, 'gateway/dist/main.js')];
    const haloCache = graphql && add('gateway-cache', 4993 + portOffset, gatewayArgs, haloEnv);
    const haloNoDedupe =
      graphql && opts.noDedupe
        ? add('gateway-no-dedupe', 4994 + portOffset, gatewayArgs, {
            ...environOf(gateway.child.pid!),
            HTTP_PORT: String(4994 + portOffset),
            METRICS_PORT: '0',
            GRAPHQL_DEDUPE_INFLIGHT: 'false',
          })
        : undefined;

    // nginx in front of content, for S2 (src/peers/nginx.ts): skipped with one line when not installed.
    const nginxAt = { dir: join(opts.workDir, 'nginx'), port: 4989 + portOffset, upstream: services.content!, logDir, log: opts.log };
    const nginx = nginxIfInstalled(nginxAt);
    if (nginx) started.push(nginx);
    // The same, on Node's HTTP server and undici with nothing of the gateway's own (src/peers/node-floor.ts).
    const floor = add('node-floor', 4988 + portOffset, [resolve(__dirname, 'peers/node-floor.js')], {
      ...base,
      PORT: String(4988 + portOffset),
      UPSTREAM: services.content!,
    });

    await waitFor(ceiling, async () => (await fetch(`${ceiling.url}/hello`)).ok);
    if (nginx) await waitFor(nginx, async () => (await fetch(`${nginx.url}${REST_PATHS.post}`)).ok);
    await waitFor(floor, async () => (await fetch(`${floor.url}${REST_PATHS.post}`)).ok);
    const present = (p: ExtraProcess | false | undefined): p is ExtraProcess => p !== undefined && p !== false;
    for (const p of [hive, hiveRust, hiveNoDedupe, apollo, apolloFetch].filter(present)) await waitFor(p, graphqlReady(p.url));
    for (const p of [haloCache, haloNoDedupe].filter(present)) await waitFor(p, async () => (await fetch(`${p.url}/readyz`)).ok);
    return {
      ceiling,
      ...(hive && hiveRust && apollo && haloCache ? { graphql: { hive, hiveRust, apollo, haloCache } } : {}),
      ...(hiveNoDedupe ? { hiveNoDedupe } : {}),
      ...(apolloFetch ? { apolloFetch } : {}),
      ...(haloNoDedupe ? { haloNoDedupe } : {}),
      ...(nginx ? { nginx } : {}),
      floor,
      all: [...started],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

// ── What is measured ────────────────────────────────────────────────────────────────────────

export const QUERIES = {
  me: '{ me { orders { id product { name price } user { name } } } }',
  nested: '{ users { id name posts { id title author { id name } comments { id body author { name } } } } }',
  flat: '{ posts(first: 10) { edges { node { id title } } } }',
  products: '{ products(page: 1, limit: 10) { data { id name price } meta { total } } }',
} as const;

export const REST_PATHS = { post: '/posts/2', products: '/products?page=2&limit=5' } as const;

export interface LoadTarget {
  id: string;
  label: string;
  url: string;
  init: { method: 'GET' | 'POST'; body?: string; headers?: Record<string, string> };
  /** Headers of each connection on top of `init.headers` (connection i: entry i mod length): distinct callers. */
  perConnection?: Record<string, string>[];
  /** The process whose CPU time is charged to this target's requests. */
  cpuPid?: number;
  /** The processes behind it (subgraphs, PostgreSQL's backends): their CPU is added for the total per request. */
  behindPids?: () => number[];
}

/** CPU µs of the target's process and of the processes behind it, now: read before and after a run. */
export function cpuOfTarget(t: LoadTarget): { own: number; behind: number } {
  const own = t.cpuPid ? cpuMicros(t.cpuPid) : 0;
  let behind = 0;
  for (const pid of t.behindPids?.() ?? []) {
    try {
      behind += cpuMicros(pid);
    } catch {
      // a backend that exited between the listing and the read
    }
  }
  return { own, behind };
}

/** The CPU per request a run cost, from the readings before and after it. */
export function cpuPerRequest(
  t: LoadTarget,
  before: { own: number; behind: number },
  requests: number,
): Pick<Sample, 'cpuUsPerRequest' | 'totalCpuUsPerRequest'> {
  if (!t.cpuPid || requests <= 0) return { cpuUsPerRequest: null };
  const after = cpuOfTarget(t);
  const own = (after.own - before.own) / requests;
  return {
    cpuUsPerRequest: own,
    ...(t.behindPids ? { totalCpuUsPerRequest: own + (after.behind - before.behind) / requests } : {}),
  };
}

/** autocannon's options for one run of the target (measured or warm-up). */
export function loadOptions(t: LoadTarget, connections: number, durationS: number): autocannon.Options {
  return {
    url: t.url,
    connections,
    duration: durationS,
    ...t.init,
    ...(t.perConnection ? { setupClient: perConnectionHeaders(t.perConnection) } : {}),
  };
}

export interface GatewaysOptions {
  system: RunningSystem;
  peers: Peers;
  jwtSecret: string;
  connections: number;
  durationS: number;
  rounds: number;
  warmupS: number;
  log: (line: string) => void;
  /** Only these comparisons (group ids, e.g. `rest-post`); all when absent. */
  only?: string[] | undefined;
  /** Also the S1 queries asked by one caller on every connection (`me-1caller`, …): the secondary table. */
  oneCaller: boolean;
  /** The load generator: autocannon in this process (`measure`, the default) or k6 (src/k6-driver.ts). */
  driver?: Measure;
}

/** Loads the target with `connections` closed-loop connections for `durationS` seconds. */
export type Measure = (t: LoadTarget, connections: number, durationS: number) => Promise<Sample>;

export interface Ratio {
  /** Per-round values, in round order. */
  values: number[];
  spread: Spread;
}

export interface GatewaysReport {
  groups: { id: string; title: string; targets: { id: string; label: string; url: string; cpuOf?: string }[] }[];
  rounds: RoundSamples[];
  ceiling: Sample;
  /** The comparisons the summary shows, by name (e.g. `me:halo/hive`, `me:cpu:halo/apollo`). */
  ratios: Record<string, Ratio>;
  /** Median per target: req/s, p50, p99, CPU µs per request; errors summed over the rounds. */
  perTarget: Record<
    string,
    {
      rps: number;
      p50: number;
      p99: number;
      cpuUsPerRequest: number | null;
      /** Gateway + subgraphs + PostgreSQL per request (S1 rows). */
      totalCpuUsPerRequest: number | null;
      errors: number;
      timeouts: number;
      requests: number;
    }
  >;
  ordersOfCaller: number;
  /** How many distinct callers (one per connection) asked the S1 rows. */
  callers: number;
}

export async function measure(t: LoadTarget, connections: number, durationS: number): Promise<Sample> {
  const before = cpuOfTarget(t);
  const r = await autocannon(loadOptions(t, connections, durationS));
  const requests = r.requests.total;
  const cpu = cpuPerRequest(t, before, requests);
  return {
    rps: requests / r.duration,
    requests,
    // autocannon's `errors` already include its `timeouts`.
    errors: r.errors + r.non2xx,
    timeouts: r.timeouts,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ...cpu,
  };
}

export const gqlInit = (query: string, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  body: JSON.stringify({ query }),
  headers: { 'content-type': 'application/json', ...headers },
});

/** POSTs the target's request once: the parsed answer, refusing a non-200, errors or no data. */
export async function answerOf(t: LoadTarget): Promise<{ body: string; headers: Headers }> {
  const res = await fetch(t.url, { method: t.init.method, headers: t.init.headers ?? {}, ...(t.init.body ? { body: t.init.body } : {}) });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${t.label} ${t.url}: HTTP ${res.status}: ${body.slice(0, 500)}`);
  return { body, headers: res.headers };
}

export async function graphqlData(t: LoadTarget): Promise<{ data: unknown; headers: Headers }> {
  const { body, headers } = await answerOf(t);
  const parsed = JSON.parse(body) as { data?: unknown; errors?: unknown[] };
  if (parsed.errors?.length || parsed.data == null) throw new Error(`${t.label} answered ${t.id} with errors: ${body.slice(0, 800)}`);
  return { data: parsed.data, headers };
}

// eslint-disable-next-line max-lines-per-function -- a benchmark: its steps in the order they run
export async function benchGateways(opts: GatewaysOptions): Promise<GatewaysReport> {
  const { system, peers, log } = opts;
  const load = opts.driver ?? measure;
  const gw = system.processes.find((p) => p.name === 'gateway')!;
  const direct = (name: string) => system.processes.find((p) => p.name === name && !p.replica)!;
  // Alice of the demo data (content user 2): a real user, so `user { name }` resolves; the one caller of the `-1caller` rows.
  const authorization = `Bearer ${signAccessToken({ sub: '2', name: 'Alice', role: 'user' }, opts.jwtSecret, 24 * 3600)}`;
  await ensureOrders(gw.url, authorization, log);
  // The distinct callers of the S1 rows: one per connection.
  const callers: Caller[] = peers.graphql ? await registerCallers(gw.url, opts.connections, log, 'bench') : [];
  const perConnection = callers.map((c) => ({ authorization: `Bearer ${c.token}` }));

  const gql = peers.graphql;
  // Behind every gateway the same processes: the subgraphs and the embedded PostgreSQL (its
  // postmaster and backends; a PostgreSQL given by DATABASE_URL is not this run's alone).
  const subgraphPids = system.processes.filter((p) => isEdgeService(p.name)).map((p) => p.child.pid!);
  const postgresPid = system.postgres?.child.pid;
  const behindPids = () => [...subgraphPids, ...(postgresPid ? [postgresPid, ...descendants(postgresPid)] : [])];
  const gateways = [
    { key: 'halo', label: 'Halo', url: gw.url, pid: gw.child.pid! },
    ...(gql
      ? [
          { key: 'hive', label: 'Hive Gateway', url: gql.hive.url, pid: gql.hive.child.pid! },
          { key: 'hive-rust', label: 'Hive Gateway + Rust query planner', url: gql.hiveRust.url, pid: gql.hiveRust.child.pid! },
          { key: 'apollo', label: 'plain @apollo/gateway', url: gql.apollo.url, pid: gql.apollo.child.pid! },
        ]
      : []),
    ...(peers.apolloFetch
      ? [
          {
            key: 'apollo-fetch',
            label: 'plain @apollo/gateway, global fetch',
            url: peers.apolloFetch.url,
            pid: peers.apolloFetch.child.pid!,
          },
        ]
      : []),
    ...(peers.haloNoDedupe
      ? [{ key: 'halo-nodedupe', label: 'Halo, no dedupe', url: peers.haloNoDedupe.url, pid: peers.haloNoDedupe.child.pid! }]
      : []),
    ...(peers.hiveNoDedupe
      ? [{ key: 'hive-nodedupe', label: 'Hive Gateway, no dedupe', url: peers.hiveNoDedupe.url, pid: peers.hiveNoDedupe.child.pid! }]
      : []),
  ];
  /** S1: `query` through every gateway, by the distinct callers (one per connection) or by one caller (`headers`: the same on every connection). */
  const graphqlGroup = (
    id: string,
    query: keyof typeof QUERIES,
    title: string,
    who: { distinct: true } | { distinct: false; headers?: Record<string, string> },
  ): Group<LoadTarget> & { title: string } => ({
    id,
    title,
    targets: gateways.map((g) => ({
      id: `${id}:${g.key}`,
      label: g.label,
      url: `${g.url}/graphql`,
      init: gqlInit(QUERIES[query], who.distinct ? {} : who.headers),
      ...(who.distinct ? { perConnection } : {}),
      cpuPid: g.pid,
      behindPids,
    })),
  });
  const restGroup = (
    id: string,
    title: string,
    path: string,
    service: string,
    nginx?: NginxPeer,
    floor?: ExtraProcess,
  ): Group<LoadTarget> & { title: string } => ({
    id,
    title,
    targets: [
      { id: `${id}:gateway`, label: 'via Halo gateway', url: `${gw.url}${path}`, init: { method: 'GET' }, cpuPid: gw.child.pid! },
      {
        id: `${id}:direct`,
        label: `direct to ${service}`,
        url: `${direct(service).url}${path}`,
        init: { method: 'GET' },
        cpuPid: direct(service).child.pid!,
      },
      // The reference proxy: nginx, one worker (whose CPU is charged), keep-alive upstream, same CPU.
      ...(nginx
        ? [
            {
              id: `${id}:nginx`,
              label: 'via nginx (1 worker)',
              url: `${nginx.url}${path}`,
              init: { method: 'GET' as const },
              cpuPid: nginx.workerPid(),
            },
          ]
        : []),
      // What node:http and undici cost before the gateway does anything of its own.
      ...(floor
        ? [
            {
              id: `${id}:floor`,
              label: 'via node:http + undici alone',
              url: `${floor.url}${path}`,
              init: { method: 'GET' as const },
              cpuPid: floor.child.pid!,
            },
          ]
        : []),
    ],
  });
  const graphqlGroups = (g: NonNullable<Peers['graphql']>): (Group<LoadTarget> & { title: string })[] => [
    graphqlGroup('me', 'me', 'S1 `me { orders { product user } }` (auth → payments → catalog + content), one caller per connection', {
      distinct: true,
    }),
    graphqlGroup('nested', 'nested', 'S1 nested `users { posts { author comments { author } } }`, one signed-in caller per connection', {
      distinct: true,
    }),
    graphqlGroup('flat', 'flat', 'S1 flat `posts(first: 10)`, one signed-in caller per connection', { distinct: true }),
    ...(opts.oneCaller
      ? [
          graphqlGroup('me-1caller', 'me', 'S1 `me { orders { product user } }`, ONE caller (one token) on every connection', {
            distinct: false,
            headers: { authorization },
          }),
          graphqlGroup('nested-1caller', 'nested', 'S1 nested, anonymous: the same request on every connection', { distinct: false }),
          graphqlGroup('flat-1caller', 'flat', 'S1 flat, anonymous: the same request on every connection', { distinct: false }),
        ]
      : []),
    {
      id: 'products',
      title: 'S1c anonymous public `products(page: 1, limit: 10)` (catalog maxAge 60)',
      targets: [
        {
          id: 'products:halo-cache',
          label: 'Halo, response cache 32 MiB',
          url: `${g.haloCache.url}/graphql`,
          init: gqlInit(QUERIES.products),
          cpuPid: g.haloCache.child.pid!,
        },
        {
          id: 'products:halo',
          label: 'Halo, response cache off',
          url: `${gw.url}/graphql`,
          init: gqlInit(QUERIES.products),
          cpuPid: gw.child.pid!,
        },
        {
          id: 'products:hive',
          label: 'Hive Gateway',
          url: `${g.hive.url}/graphql`,
          init: gqlInit(QUERIES.products),
          cpuPid: g.hive.child.pid!,
        },
      ],
    },
  ];
  const allGroups: (Group<LoadTarget> & { title: string })[] = [
    ...(gql ? graphqlGroups(gql) : []),
    restGroup('rest-post', `S2 REST GET ${REST_PATHS.post}`, REST_PATHS.post, 'content', peers.nginx, peers.floor),
    restGroup('rest-products', `S2 REST GET ${REST_PATHS.products}`, REST_PATHS.products, 'catalog'),
  ];

  const groups = opts.only ? allGroups.filter((g) => opts.only!.includes(g.id)) : allGroups;
  if (!groups.length)
    throw new Error(`BENCH_GROUPS=${opts.only?.join(',')}: no such comparison (${allGroups.map((g) => g.id).join(', ')})`);

  // Every answer checked before anything is measured: data without errors, the same from every gateway.
  // Distinct-caller rows: checked for every caller (`me` must name the caller itself).
  let ordersOfCaller = 0;
  for (const group of groups) {
    const rest = group.id.startsWith('rest-');
    const variants: { name?: string; headers: Record<string, string> }[] = group.targets[0]?.perConnection
      ? callers.map((c, i) => ({ name: c.name, headers: perConnection[i]! }))
      : [{ headers: {} }];
    for (const v of variants) {
      const answers: string[] = [];
      for (const target of group.targets) {
        const t = { ...target, init: { ...target.init, headers: { ...target.init.headers, ...v.headers } } };
        if (rest) {
          answers.push((await answerOf(t)).body);
          continue;
        }
        const { data } = await graphqlData(t);
        answers.push(JSON.stringify(data));
        if (group.id.startsWith('me')) {
          const orders = (data as { me: { orders: { product: { name: string } | null; user: { name: string } | null }[] } }).me.orders;
          if (!orders.length || orders.some((o) => !o.product?.name || !o.user?.name || (v.name && o.user.name !== v.name))) {
            throw new Error(
              `${t.label}: me { orders }${v.name ? ` as ${v.name}` : ''} lacks orders, products or the caller's name: ${JSON.stringify(data).slice(0, 500)}`,
            );
          }
          ordersOfCaller = orders.length;
        }
      }
      const differing = group.targets.filter((_, i) => answers[i] !== answers[0]);
      if (differing.length) {
        throw new Error(
          `${group.id}${v.name ? ` (${v.name})` : ''}: ${differing.map((t) => t.label).join(', ')} answered differently from ${group.targets[0]!.label}:\n${answers.map((a) => a.slice(0, 300)).join('\n')}`,
        );
      }
    }
  }
  // The cached gateway must really answer from its cache (a hit carries Age).
  const products = groups.find((g) => g.id === 'products');
  const hit = products ? await graphqlData(products.targets[0]!) : null;
  if (hit && hit.headers.get('age') === null)
    throw new Error(`Halo with its response cache did not answer products from the cache (no Age header)`);
  log(
    `bench: every query answers the same data without errors through every gateway (S1: for each of ${callers.length} callers, ${ordersOfCaller} orders each)`,
  );

  // Warm-up: every target once at full load (JIT, pools, query plans), then the ceiling once.
  for (const group of groups) {
    for (const t of group.targets) {
      log(`bench: warm-up ${t.id} (${opts.warmupS} s)`);
      await load(t, opts.connections, opts.warmupS);
    }
  }
  log('bench: raw node:http ceiling …');
  const ceilingTarget: LoadTarget = {
    id: 'ceiling',
    label: 'raw node:http',
    url: `${peers.ceiling.url}/hello`,
    init: { method: 'GET' },
    cpuPid: peers.ceiling.child.pid!,
  };
  await load(ceilingTarget, opts.connections, Math.min(opts.warmupS, 2));
  const ceiling = await load(ceilingTarget, opts.connections, opts.durationS);

  const rounds = await runRounds(groups, opts.rounds, async (t, round) => {
    const s = await load(t, opts.connections, opts.durationS);
    log(
      `bench: round ${round + 1}/${opts.rounds} ${t.id}: ${Math.round(s.rps)} req/s, p99 ${s.p99} ms` +
        `${s.cpuUsPerRequest === null ? '' : `, ${Math.round(s.cpuUsPerRequest)} µs CPU/req`}` +
        `${s.errors ? `, ${s.errors} ERRORS (${s.timeouts ?? 0} timed out)` : ''}`,
    );
    return s;
  });

  const ratios: Record<string, Ratio> = {};
  const ratio = (name: string, a: string, b: string, of?: (s: Sample) => number | null) => {
    const values = pairedRatios(rounds, a, b, of);
    ratios[name] = { values, spread: spread(values) };
  };
  const cpu = (s: Sample) => s.cpuUsPerRequest;
  const total = (s: Sample) => s.totalCpuUsPerRequest ?? null;
  for (const q of ['me', 'nested', 'flat', 'me-1caller', 'nested-1caller', 'flat-1caller']) {
    ratio(`${q}:halo/hive`, `${q}:halo`, `${q}:hive`);
    ratio(`${q}:halo/hive-rust`, `${q}:halo`, `${q}:hive-rust`);
    ratio(`${q}:halo/apollo`, `${q}:halo`, `${q}:apollo`);
    ratio(`${q}:cpu:halo/apollo`, `${q}:halo`, `${q}:apollo`, cpu);
    ratio(`${q}:cpu:halo/hive`, `${q}:halo`, `${q}:hive`, cpu);
    ratio(`${q}:cpu:halo/hive-rust`, `${q}:halo`, `${q}:hive-rust`, cpu);
    ratio(`${q}:total:halo/apollo`, `${q}:halo`, `${q}:apollo`, total);
    ratio(`${q}:total:halo/hive-rust`, `${q}:halo`, `${q}:hive-rust`, total);
    if (peers.apolloFetch) {
      ratio(`${q}:halo/apollo-fetch`, `${q}:halo`, `${q}:apollo-fetch`);
      ratio(`${q}:cpu:halo/apollo-fetch`, `${q}:halo`, `${q}:apollo-fetch`, cpu);
      ratio(`${q}:cpu:apollo/apollo-fetch`, `${q}:apollo`, `${q}:apollo-fetch`, cpu);
      ratio(`${q}:total:halo/apollo-fetch`, `${q}:halo`, `${q}:apollo-fetch`, total);
    }
    if (peers.haloNoDedupe && peers.hiveNoDedupe) {
      ratio(`${q}:halo-nodedupe/hive-nodedupe`, `${q}:halo-nodedupe`, `${q}:hive-nodedupe`);
      ratio(`${q}:halo-nodedupe/apollo`, `${q}:halo-nodedupe`, `${q}:apollo`);
      ratio(`${q}:cpu:halo-nodedupe/apollo`, `${q}:halo-nodedupe`, `${q}:apollo`, cpu);
    }
  }
  ratio('products:halo-cache/hive', 'products:halo-cache', 'products:hive');
  ratio('products:halo/hive', 'products:halo', 'products:hive');
  for (const r of ['rest-post', 'rest-products']) ratio(`${r}:gateway/direct`, `${r}:gateway`, `${r}:direct`);
  if (peers.nginx) {
    ratio('rest-post:nginx/direct', 'rest-post:nginx', 'rest-post:direct');
    ratio('rest-post:gateway/nginx', 'rest-post:gateway', 'rest-post:nginx');
    ratio('rest-post:cpu:gateway/nginx', 'rest-post:gateway', 'rest-post:nginx', cpu);
    ratio('rest-post:cpu:floor/nginx', 'rest-post:floor', 'rest-post:nginx', cpu);
  }
  ratio('rest-post:floor/direct', 'rest-post:floor', 'rest-post:direct');
  ratio('rest-post:cpu:gateway/floor', 'rest-post:gateway', 'rest-post:floor', cpu);

  const perTarget: GatewaysReport['perTarget'] = {};
  for (const group of groups) {
    for (const t of group.targets) {
      const m = (of: (s: Sample) => number | null) => spread(perRound(rounds, t.id, of)).median;
      perTarget[t.id] = {
        rps: m((s) => s.rps),
        p50: m((s) => s.p50),
        p99: m((s) => s.p99),
        cpuUsPerRequest: t.cpuPid ? m(cpu) : null,
        totalCpuUsPerRequest: t.behindPids ? m(total) : null,
        errors: perRound(rounds, t.id, (s) => s.errors).reduce((a, b) => a + b, 0),
        timeouts: perRound(rounds, t.id, (s) => s.timeouts ?? 0).reduce((a, b) => a + b, 0),
        requests: perRound(rounds, t.id, (s) => s.requests).reduce((a, b) => a + b, 0),
      };
    }
  }
  const pidName = new Map<number, string>([
    ...system.processes.map((p) => [p.child.pid!, p.name] as const),
    ...peers.all.map((p) => [p.child.pid!, p.name] as const),
    ...(peers.nginx ? [[peers.nginx.workerPid(), 'nginx worker'] as const] : []),
  ]);
  return {
    groups: groups.map((g) => ({
      id: g.id,
      title: g.title,
      targets: g.targets.map((t) => ({
        id: t.id,
        label: t.label,
        url: t.url,
        ...(t.cpuPid ? { cpuOf: pidName.get(t.cpuPid) ?? String(t.cpuPid) } : {}),
      })),
    })),
    rounds,
    ceiling,
    ratios,
    perTarget,
    ordersOfCaller,
    callers: callers.length,
  };
}
