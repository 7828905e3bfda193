import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { get as httpGet } from 'node:http';
import { createInterface } from 'node:readline';
import {
  COMPACT_MESSAGE,
  EMBEDDED_CORS_ORIGINS,
  EXIT_CANNOT_START,
  generateServiceKey,
  grpcAddrVar,
  LATE_ENV_VAR,
  provisionServiceRoles,
  roleUrl,
  SERVICE_NAMES,
  serviceUrlVar,
  type ServiceName,
  trustedCallersOf,
  type LateEnvMessage,
  type ServiceRole,
} from '@halo/kit/launch';
import { DEV_JWT_SECRET, DEV_OIDC_CLIENT_ID, DEV_OIDC_CLIENT_SECRET } from './dev-defaults';
import { DEVELOPER, removeDevCredentials, writeDevCredentials } from './dev-credentials';
import { controlSocketPath, listenControl, type RestartAnswer } from './launcher-control';
import { ensureDatabase } from './database-check';
import { LaunchError } from './launch-error';
import { BUNDLED_ENTRIES, bundleIsFresh, bundlePath } from './bundle';
import { CODE_CACHE_REQUEST, isCodeCacheReport, type CodeCacheReport } from './code-cache';
import { tracingEnabled } from '@halo/kit/tracing';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { listenLazily, type LazyPort } from './lazy-port';
import {
  addressesOf,
  autoPorts,
  checkFixedPorts,
  fixedPorts,
  cannotStartLine,
  PortTakenError,
  type SystemAddresses,
  type SystemPorts,
} from './launch-ports';
import { record, takeOver, writeRecord, type LauncherRecord } from './process-records';

/**
 * Starts Halo as separate processes on loopback — every service and the gateway — and waits
 * until each answers `/readyz`. `npm start`, the e2e suite and the benchmark all use this, so
 * the way Halo is started in tests is the way a newcomer starts it.
 */
const ROOT = resolve(__dirname, '../..');

export { LaunchError, PortTakenError, type SystemAddresses };

export type ProcessName = ServiceName | 'gateway' | 'oidc' | 'postgres' | 'launcher';

/**
 * A crashed process is restarted after `initialDelayMs`, doubling per recent crash up to
 * `maxDelayMs`; `maxCrashes` within `windowMs` is a crash loop, and the launcher gives up.
 */
export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  maxCrashes: number;
  windowMs: number;
}
export const DEFAULT_RESTART_POLICY: RestartPolicy = { initialDelayMs: 500, maxDelayMs: 10_000, maxCrashes: 5, windowMs: 60_000 };

/** The embedded mode's database, as the services see it. */
export const EMBEDDED_DATABASE = 'halo';
export const DEFAULT_POSTGRES_DIR = resolve(ROOT, '.data', 'postgres');

export interface LaunchOptions {
  /** Extra environment for every process (on top of this process's environment). */
  env?: Record<string, string | undefined>;
  /** Extra environment for one process. */
  envFor?: Partial<Record<ProcessName, Record<string, string | undefined>>>;
  /**
   * `fixed` (the default): the topology table's ports plus `portOffset`, as `npm start` and the
   * benchmarks run. `auto`: every port the OS's choice, so any number of systems (and of test runs)
   * share a machine; the RunningSystem says where everything listens (launch-ports.ts).
   */
  ports?: 'fixed' | 'auto';
  /** Fixed ports: added to every default port, so a system can run beside `npm start`. */
  portOffset?: number;
  /**
   * Called with the system's addresses once they are chosen, before any process starts (with
   * `ports: 'auto'`, again for each new attempt).
   */
  onStarting?: (addresses: SystemAddresses) => void | Promise<void>;
  /** Restart policy for crashed processes (default DEFAULT_RESTART_POLICY). */
  restart?: Partial<RestartPolicy>;
  /**
   * Called once when the system stopped by itself after it was ready: a crash loop, or the
   * embedded PostgreSQL gone. Everything has been stopped by then.
   */
  onGiveUp?: (name: ProcessName, message: string) => void;
  /** What to do with each log line of the children (and the launcher's own, as `launcher`). */
  onLog?: (name: ProcessName, line: string) => void;
  /**
   * Each Node process writes its stdout and stderr straight to `<logDir>/<name>.log`
   * (`<name>-<replica>.log` for an extra replica; truncated at start, appended after a restart)
   * instead of through `onLog`: a benchmark must not spend its own CPU relaying the servers' log
   * lines. `onLog` still gets the launcher's and PostgreSQL's lines.
   */
  logDir?: string;
  readyTimeoutMs?: number;
  /**
   * Embedded mode (no DATABASE_URL): where the PostgreSQL cluster keeps its files.
   * Default `.data/postgres` in the checkout.
   */
  postgresDataDir?: string;
  /**
   * Runs the dev OpenID provider and registers it with auth as provider `dev`. Defaults to on
   * exactly when HALO_ENV is development (the `npm start` default); never meant for production.
   */
  devOidc?: boolean;
  /**
   * How many processes of a service to run (default 1), for what only several replicas prove
   * (tests: cross-replica subscriptions). The others get the first one's environment — database,
   * schema, Redis, keys — on free loopback ports (gRPC on a port of the OS's choosing).
   */
  replicas?: Partial<Record<ServiceName, number>>;
  /**
   * `npm start`: once ready and idle, every process collects its start's garbage and gives back
   * the young generation it grew (kit: process/compact.ts), ~20 MB RSS each. Off by default, so tests and
   * benchmarks run exactly as before.
   */
  compactWhenIdle?: boolean;
}

export interface RunningProcess {
  name: ProcessName;
  /** The current process: a new one after each restart. */
  child: ChildProcess;
  /** How many times it was restarted after a crash. */
  restarts: number;
  url: string;
  grpcAddr?: string;
  /** The path that answers 200 once the process is ready. */
  readyPath: string;
  /** 1, 2, … for the extra processes of a service started with `replicas`; absent for the first. */
  replica?: number;
  /**
   * A planned restart (`npm run restart`): SIGTERM (a graceful drain), then a new process from the
   * current bundle, resolved once it is ready. Not a crash: the crash-loop count is untouched.
   */
  replace(): Promise<void>;
}

/**
 * Every address of the system (SystemAddresses). The dev OpenID provider's (`devOidcUrl`), when it
 * runs, is the launcher's own listener: the provider's process (`oidc` in `processes`) starts on the
 * first connection.
 */
export interface RunningSystem extends SystemAddresses {
  processes: RunningProcess[];
  /** Embedded mode only: the server and each service's own DATABASE_URL. */
  postgres?: EmbeddedPostgres & { databaseUrls: Record<ServiceName, string> };
  stop(): Promise<void>;
}

/** Runs a bundle with V8's code cache (tools/src/code-cache.ts, ADR 0012). */
export const CODE_CACHE_RUNNER = resolve(ROOT, 'tools/dist/code-cache.js');

/**
 * What a process runs: its single-file bundle (tools/src/bundle.ts, ADR 0010) when one is built and
 * newer than every file it was made from, else its compiled entry. `HALO_BUNDLES=0` always runs the
 * compiled entry, and so does tracing: OpenTelemetry hooks `require`, which a bundle bypasses.
 * A bundle runs through CODE_CACHE_RUNNER, which compiles it with the code cache of the start
 * before (ADR 0012), unless `HALO_CODE_CACHE=0`, or `HALO_SOURCE_MAPS=1` (Node then maps the
 * traces of a script it runs itself).
 */
export function entryArgs(name: ProcessName, env: NodeJS.ProcessEnv): string[] {
  const entry = resolve(ROOT, BUNDLED_ENTRIES[name] ?? `services/${name}/dist/main.js`);
  const bundled = env.HALO_BUNDLES !== '0' && !tracingEnabled(env) && bundleIsFresh(entry);
  if (!bundled) return [entry];
  if (env.HALO_SOURCE_MAPS === '1') return ['--enable-source-maps', bundlePath(entry)];
  return env.HALO_CODE_CACHE === '0' ? [bundlePath(entry)] : [CODE_CACHE_RUNNER, bundlePath(entry)];
}

/** How long the launcher waits for the processes to write their code caches before it says how it went. */
const CODE_CACHE_REPORT_MS = 30_000;

/**
 * Once the system is ready, every process started through CODE_CACHE_RUNNER writes its code cache
 * (unless it started from one), and the launcher says in one line how this start went.
 */
export async function requestCodeCaches(running: readonly RunningProcess[], log: (line: string) => void): Promise<void> {
  const asked = running.filter(({ child }) => child.connected && child.spawnargs.includes(CODE_CACHE_RUNNER));
  if (!asked.length) return;
  const reports = await Promise.all(
    asked.map(
      ({ child }) =>
        new Promise<CodeCacheReport | undefined>((done) => {
          const timer = setTimeout(() => finish(undefined), CODE_CACHE_REPORT_MS).unref();
          const onMessage = (message: unknown) => isCodeCacheReport(message) && finish(message);
          const finish = (report: CodeCacheReport | undefined) => {
            clearTimeout(timer);
            child.off('message', onMessage).off('exit', onExit);
            done(report);
          };
          const onExit = () => finish(undefined);
          child.on('message', onMessage).once('exit', onExit);
          child.send(CODE_CACHE_REQUEST, (err) => err && finish(undefined));
        }),
    ),
  );
  const count = (outcome: CodeCacheReport['outcome']) => reports.filter((r) => r?.outcome === outcome).length;
  const written = reports.filter((r) => r?.written).length;
  const failed = reports.flatMap((r, i) => (r?.error ? [`${asked[i]!.name}: ${r.error}`] : []));
  const notes = [
    count('rejected') && `${count('rejected')} rejected by V8`,
    count('stale') && `${count('stale')} made for another build or damaged`,
    written && `written for ${written}`,
    failed.length && `not written: ${failed.join('; ')}`,
  ].filter(Boolean);
  log(`V8 code cache: ${count('used')} of ${asked.length} processes started from it${notes.length ? ` (${notes.join(', ')})` : ''}`);
}

/** The dev OpenID provider answers this once it is ready. */
const OIDC_READY = '/.well-known/openid-configuration';

/** How many times a start on the OS's ports is tried when another program took one of them first. */
const AUTO_PORT_ATTEMPTS = 3;

export async function startSystem(opts: LaunchOptions = {}): Promise<RunningSystem> {
  if (opts.ports !== 'auto') return startOn(await fixedPorts(opts.portOffset ?? 0, opts.replicas), opts);
  if (opts.portOffset !== undefined) throw new LaunchError('portOffset moves the fixed ports; with ports: auto there are none');
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(await autoPorts(opts.replicas), opts);
    } catch (err) {
      if (!(err instanceof PortTakenError) || attempt === AUTO_PORT_ATTEMPTS) throw err;
      opts.onLog?.(
        'launcher',
        `another program took a port chosen for this system before its process listened (${err.message.replace(/; stopping Halo\.$/, '')}); starting again on new ports (attempt ${attempt + 1} of ${AUTO_PORT_ATTEMPTS})`,
      );
    }
  }
}

// eslint-disable-next-line max-lines-per-function -- the start-up sequence, step by step in the order it runs; to split (issue 26)
async function startOn(ports: SystemPorts, opts: LaunchOptions): Promise<RunningSystem> {
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const haloEnv = opts.env?.HALO_ENV ?? process.env.HALO_ENV;
  const dev = haloEnv === 'development';
  const running: RunningProcess[] = [];
  let postgres: RunningSystem['postgres'];
  let stopped: Promise<void> | undefined;
  let devOidc: LazyPort | undefined;
  let control: { close(): Promise<void> } | undefined;
  const log = (line: string) => opts.onLog?.('launcher', line);
  const embedded = !(opts.env?.DATABASE_URL ?? process.env.DATABASE_URL);
  const postgresDataDir = opts.postgresDataDir ?? DEFAULT_POSTGRES_DIR;
  const recordFile = join(dirname(postgresDataDir), `launcher-${ports.key}.json`);
  // Nothing is started (or stopped) until these pass: another launcher, ports, the database.
  const reaped = await takeOver(recordFile, embedded ? postgresDataDir : undefined, log);
  // Ports a reaped process held may take a moment more to be released by the kernel.
  if (opts.ports !== 'auto') await checkFixedPorts(ports, opts.devOidc ?? dev, reaped > 0 ? 3_000 : 0);
  if (!embedded) await ensureDatabase((opts.env?.DATABASE_URL ?? process.env.DATABASE_URL)!, log);
  const launcherRecord = record('launcher', process.pid);
  const records: LauncherRecord | undefined = launcherRecord && {
    launcher: launcherRecord,
    processes: [],
    ...(embedded ? { postgresDataDir } : {}),
  };
  const remember = (name: string, pid: number | undefined) => {
    const r = pid === undefined ? undefined : record(name, pid);
    if (!records || !r) return;
    records.processes.push(r);
    writeRecord(recordFile, records);
  };
  if (records) writeRecord(recordFile, records);
  const stop = () =>
    (stopped ??= (async () => {
      supervisor.stopping = true;
      await control?.close();
      await devOidc?.close();
      await stopAll(running, log);
      // Last: the services have drained and closed their pools.
      await postgres?.stop();
      if (developer) removeDevCredentials(registryPort);
      rmSync(recordFile, { force: true });
    })());
  let ready = false;
  const supervisor: Supervisor = {
    stopping: false,
    gaveUp: undefined,
    policy: { ...DEFAULT_RESTART_POLICY, ...opts.restart },
    log,
    giveUp(name, message, portTaken = false) {
      if (this.stopping) return;
      this.gaveUp = portTaken ? new PortTakenError(message) : new Error(message);
      this.log(message);
      // Before "ready", startSystem itself reports the failure (its waitReady sees `gaveUp`).
      void stop().then(() => ready && opts.onGiveUp?.(name, message));
    },
  };

  // Every process learns every peer's HTTP and gRPC address (e.g. CONTENT_URL, CONTENT_GRPC_ADDR);
  // REGISTRY_URL among them is where services publish and the gateway reads (docs/registry.md).
  const peers: Record<string, string> = {};
  for (const name of SERVICE_NAMES) {
    peers[serviceUrlVar(name)] = `http://127.0.0.1:${ports.services[name].http}`;
    peers[grpcAddrVar(name)] = `127.0.0.1:${ports.services[name].grpc}`;
  }
  const gwPort = ports.gateway;
  const common: Record<string, string | undefined> = {
    ...peers,
    // glibc raises its mmap threshold after the first large free, so argon2's 19 MiB buffers
    // (auth's password hashing) then come from the heap and stay resident long after a service
    // seeded its passwords. A fixed threshold returns them.
    MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? '1048576',
    // The dev secret only ever comes from here, and only in development.
    ...(dev && !opts.env?.JWT_SECRET && !process.env.JWT_SECRET ? { JWT_SECRET: DEV_JWT_SECRET } : {}),
    // One browser-origin list for the gateway's CORS and auth's sign-in check: in development any
    // port on loopback (a Vite or webpack dev server), unless one is given.
    ...(dev && !opts.env?.CORS_ORIGINS && !process.env.CORS_ORIGINS ? { CORS_ORIGINS: EMBEDDED_CORS_ORIGINS } : {}),
  };
  const o = { ...opts, env: { ...common, ...opts.env }, envFor: { ...opts.envFor }, supervisor, remember };
  // Service identity: a fresh Ed25519 key per process at every start, and each server gets the
  // public keys of exactly the processes that call it: over gRPC, or with a service token over
  // HTTP as every process calls the registry (docs/service-identity.md, docs/registry.md).
  const keys = Object.fromEntries(
    (['gateway', ...SERVICE_NAMES] as const).map((name) => [name, generateServiceKey(name, `dev-${randomBytes(4).toString('hex')}`)]),
  );
  // In development, the registry also trusts a developer key, whose private half is left for
  // `npm run subgraph` of this checkout: registry writes need a credential in every mode.
  // (The registry's own HALO_ENV decides: it accepts a developer token only in development.)
  const registryDev = (opts.envFor?.registry?.HALO_ENV ?? haloEnv) === 'development';
  const developer = registryDev ? generateServiceKey(DEVELOPER, `dev-${randomBytes(4).toString('hex')}`) : undefined;
  const registryPort = ports.services.registry.http;
  if (developer) writeDevCredentials(registryPort, developer);
  for (const name of ['gateway', ...SERVICE_NAMES] as const) {
    const trusted = name === 'gateway' ? [] : trustedCallersOf(name).map((caller) => keys[caller]!.publicJwk);
    if (name === 'registry' && developer) trusted.push(developer.publicJwk);
    o.envFor[name] = {
      SERVICE_SIGNING_KEY: JSON.stringify(keys[name]!.privateJwk),
      ...(name === 'gateway' ? {} : { SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: trusted }) }),
      ...o.envFor[name],
    };
  }

  try {
    // The gateway (which needs only its supergraph file) needs no database, so it boots while
    // Postgres starts; the system is ready when every process is.
    const early: RunningProcess[] = [];
    if (opts.devOidc ?? dev) {
      let issuer = ''; // once the launcher listens: with auto ports, on a port of the OS's choice
      const redirect = `http://127.0.0.1:${gwPort}/auth/oauth/dev/callback`;
      // Few starts ever sign in through it: the launcher holds its port, and the first connection
      // (auth's discovery on the first /auth/oauth/dev/start) starts it behind that port.
      let provider: RunningProcess | undefined;
      devOidc = await listenLazily(
        '127.0.0.1',
        ports.devOidc,
        async () => {
          if (!provider) {
            const inner = await ports.another();
            if (supervisor.stopping) throw new Error('Halo is stopping');
            const env = { DEV_OIDC_CLIENT_ID, DEV_OIDC_CLIENT_SECRET, DEV_OIDC_REDIRECT_URIS: redirect, DEV_OIDC_ISSUER: issuer };
            log(`dev OpenID provider: starting on first use (${issuer})`);
            provider = launch(
              'oidc',
              { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(inner), ...env },
              `http://127.0.0.1:${inner}`,
              OIDC_READY,
              o,
              running,
            );
          }
          await waitReady(provider, readyTimeoutMs, supervisor);
          return Number(new URL(provider.url).port);
        },
        (err) => log(`dev OpenID provider did not start: ${(err as Error).message}`),
      );
      issuer = `http://127.0.0.1:${devOidc.port}`;
      o.envFor = {
        ...o.envFor,
        auth: {
          OAUTH_PROVIDERS: 'dev',
          OAUTH_DEV_ISSUER: issuer,
          OAUTH_DEV_CLIENT_ID: DEV_OIDC_CLIENT_ID,
          OAUTH_DEV_CLIENT_SECRET: DEV_OIDC_CLIENT_SECRET,
          OAUTH_DEV_REDIRECT_URI: redirect,
          ...o.envFor?.auth,
        },
      };
    }
    const addresses = addressesOf(ports, devOidc?.port);
    await opts.onStarting?.(addresses);
    const gateway = launch(
      'gateway',
      {
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(gwPort),
        METRICS_PORT: String(ports.gatewayMetrics),
        NODE_OPTIONS: gatewayNodeOptions(o),
        // It boots before the registry beside it: the committed files are this checkout's own.
        REGISTRY_BOOT_FROM_FILES: o.envFor.gateway?.REGISTRY_BOOT_FROM_FILES ?? o.env.REGISTRY_BOOT_FROM_FILES ?? 'true',
      },
      `http://127.0.0.1:${gwPort}`,
      '/readyz',
      o,
      running,
    );
    early.push(gateway);

    // The registry first; the others publish their contracts to it after they listen, retrying until
    // it answers (docs/registry.md), so nobody waits for it and "ready" comes as soon as before.
    const publishing = haloEnv === 'production' ? {} : { REGISTRY_PUBLISH_ON_START: 'true' };
    for (const name of SERVICE_NAMES) if (name !== 'registry') o.envFor[name] = { ...publishing, ...o.envFor[name] };
    // Embedded, the services start now, beside PostgreSQL: they load their code (most of a
    // start's CPU) while it starts, then wait for their DATABASE_URL, sent over IPC (kit:
    // late-env.ts). A process (re)spawned once the URLs are known gets them in its environment.
    const lateEnv: Record<string, string> = embedded ? { [LATE_ENV_VAR]: 'ipc' } : {};
    const services = [...SERVICE_NAMES]
      .sort((a, b) => Number(b === 'registry') - Number(a === 'registry'))
      .map((name) => {
        const { http, grpc } = ports.services[name];
        const env = { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(http), GRPC_HOST: '127.0.0.1', GRPC_PORT: String(grpc), ...lateEnv };
        return launch(name, env, peers[serviceUrlVar(name)]!, '/readyz', o, running, `127.0.0.1:${grpc}`);
      });
    const replicas: RunningProcess[] = [];
    for (const name of SERVICE_NAMES) {
      for (let replica = 1; replica < (opts.replicas?.[name] ?? 1); replica++) {
        const http = ports.replicas[name]![replica - 1]!;
        const env = { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(http), GRPC_HOST: '127.0.0.1', GRPC_PORT: '0', ...lateEnv };
        replicas.push(launch(name, env, `http://127.0.0.1:${http}`, '/readyz', o, running, undefined, replica));
      }
    }

    // The one place that decides "embedded or not": without DATABASE_URL, one PostgreSQL server of
    // our own, and each service connects with its own role to its own schema, as in production.
    if (embedded) {
      postgres = await startPostgres(postgresDataDir, opts.onLog, ports.another);
      remember('postgres', postgres.child.pid);
      const pgChild = postgres.child;
      pgChild.once('exit', (code, signal) =>
        supervisor.giveUp('postgres', `PostgreSQL exited unexpectedly (${signal ?? `code ${code}`}); stopping Halo.`),
      );
      const urls = postgres.databaseUrls;
      o.envFor = { ...o.envFor };
      for (const name of SERVICE_NAMES) o.envFor[name] = { ...o.envFor[name], DATABASE_URL: urls[name] };
      for (const proc of [...services, ...replicas]) sendLateEnv(proc, { DATABASE_URL: urls[proc.name as ServiceName] });
    }
    await Promise.all([...early, ...services, ...replicas].map((p) => waitReady(p, readyTimeoutMs, supervisor)));
    // Ready means the gateway serves the registry's composition, not the files it booted from.
    if (!(await servesRegistry(gateway, REGISTRY_ANSWER_WAIT_MS, supervisor))) {
      log(
        `the gateway still serves the committed composed files: the registry did not answer it within ${REGISTRY_ANSWER_WAIT_MS / 1000} s`,
      );
    }
    ready = true;
    control = await listenControl(controlSocketPath(dirname(recordFile), ports.key), {
      restart: (service) => restartService(service, running, log),
    });
    void requestCodeCaches(running, log);
    if (opts.compactWhenIdle) setTimeout(() => supervisor.stopping || compactAll(running), COMPACT_AFTER_READY_MS).unref();
    return { ...addresses, processes: running, ...(postgres ? { postgres } : {}), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Starts the embedded server and (re)provisions one role per service, with fresh passwords. */
async function startPostgres(
  dataDir: string,
  onLog: LaunchOptions['onLog'],
  freePort: () => Promise<number>,
): Promise<NonNullable<RunningSystem['postgres']>> {
  const server = await startEmbeddedPostgres({ dataDir, onLog: (line) => onLog?.('postgres', line), freePort });
  try {
    const roles: ServiceRole[] = SERVICE_NAMES.map((name) => ({ name, password: randomBytes(18).toString('base64url') }));
    await provisionServiceRoles(server.adminUrl, EMBEDDED_DATABASE, roles);
    const databaseUrls = Object.fromEntries(roles.map((r) => [r.name, roleUrl(server.adminUrl, r, EMBEDDED_DATABASE)])) as Record<
      ServiceName,
      string
    >;
    return Object.assign(server, { databaseUrls });
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * The gateway allocates fast and briefly under load; capping V8's young generation at 8 MB per
 * semi-space keeps fewer short-lived objects in memory at once. An explicit NODE_OPTIONS for the
 * gateway wins.
 */
export const GATEWAY_NODE_OPTIONS = '--max-semi-space-size=8';

/**
 * V8 flags the gateway is started with (not allowed in NODE_OPTIONS, hence on the command line).
 * On a machine with more than 16 GB of memory V8 lets the old generation grow to 4× what survived
 * the last full collection before collecting again, so the gateway's old space and RSS grew to
 * several times its live heap under load. 2× (what V8 picks by itself for the heap of a pod with a
 * memory limit) holds its peak RSS far lower at no measurable CPU cost (docs/benchmarks/history.md,
 * "Gateway memory").
 */
export const GATEWAY_V8_FLAGS = ['--heap-growing-percent=100'] as const;

/** With `compactWhenIdle`, every process may be asked to compact once the system idles (kit: process/compact.ts). */
const v8FlagsFor = (name: ProcessName, compact: boolean | undefined): readonly string[] => [
  ...(name === 'gateway' ? GATEWAY_V8_FLAGS : []),
  ...(compact ? ['--expose-gc'] : []),
];

/** How long after "ready" the launcher asks every process to compact its heap: past the gateway's first supergraph. */
export const COMPACT_AFTER_READY_MS = 5_000;

/** Each running process collects its garbage once (kit: process/compact.ts); a process that is gone is skipped. */
function compactAll(running: readonly RunningProcess[]): void {
  for (const { child } of running) if (child.connected) child.send(COMPACT_MESSAGE, () => undefined);
}

function gatewayNodeOptions(opts: LaunchOptions): string {
  return opts.envFor?.gateway?.NODE_OPTIONS ?? opts.env?.NODE_OPTIONS ?? process.env.NODE_OPTIONS ?? GATEWAY_NODE_OPTIONS;
}

interface Supervisor {
  stopping: boolean;
  /** Set when a crash loop (or a lost PostgreSQL) made the launcher give up. */
  gaveUp: Error | undefined;
  policy: RestartPolicy;
  log(line: string): void;
  /** `portTaken`: the process could not bind its port (with auto ports, a start worth trying again). */
  giveUp(name: ProcessName, message: string, portTaken?: boolean): void;
}

/**
 * Hands a process spawned before its database existed the rest of its environment. A process that
 * has already exited gets nothing: its restart is spawned with the full environment.
 */
function sendLateEnv(proc: RunningProcess, env: Record<string, string>): void {
  const { child } = proc;
  if (!child.connected) return;
  const message: LateEnvMessage = { halo: 'env', env };
  // An error means it exited in between: its restart gets the values in its environment.
  child.send(message, () => undefined);
}

/**
 * Spawns one process and keeps it running: a crash is followed by a restart with backoff
 * (0.5 s doubling to 10 s by default), and a crash loop (5 crashes in 60 s) stops the system.
 */
// eslint-disable-next-line max-lines-per-function -- one supervised process: spawn, restart with backoff and the crash-loop stop share its state
function launch(
  name: ProcessName,
  ports: Record<string, string>,
  url: string,
  readyPath: string,
  opts: LaunchOptions & { supervisor: Supervisor; remember: (name: string, pid: number | undefined) => void },
  running: RunningProcess[],
  grpcAddr?: string,
  replica?: number,
): RunningProcess {
  const { supervisor } = opts;
  const onLog = opts.onLog ?? (() => undefined);
  const crashes: number[] = [];
  const logFile = opts.logDir ? join(opts.logDir, `${name}${replica ? `-${replica}` : ''}.log`) : undefined;
  /** The last lines the process wrote (without a log file), for the reason it could not start. */
  const lastLines: string[] = [];
  const spawnChild = (): ChildProcess => {
    const logFd = logFile === undefined ? undefined : openSync(logFile, crashes.length ? 'a' : 'w');
    const env = { ...process.env, ...opts.env, ...opts.envFor?.[name], ...ports };
    // A restart once PostgreSQL runs has its DATABASE_URL already: nothing to wait for.
    if (env.DATABASE_URL) delete env[LATE_ENV_VAR];
    const child = spawn(process.execPath, [...v8FlagsFor(name, opts.compactWhenIdle), ...entryArgs(name, env)], {
      cwd: ROOT,
      env,
      // The IPC channel is how a child notices that the launcher died (kit: installSignalHandlers).
      stdio: ['ignore', logFd ?? 'pipe', logFd ?? 'pipe', 'ipc'],
    });
    if (logFd !== undefined) closeSync(logFd); // the child has its own copy
    opts.remember(name, child.pid);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) {
        createInterface({ input: stream }).on('line', (line) => {
          if (lastLines.push(line) > 50) lastLines.shift();
          onLog(name, line);
        });
      }
    }
    child.once('exit', (code, signal) => {
      if (supervisor.stopping || replaced.has(child)) return;
      if (code === EXIT_CANNOT_START) {
        // It said why in one line (kit: runService); starting it again cannot help.
        const why = cannotStartLine(logFile ? linesOf(logFile) : lastLines, name);
        const message = `${why.startsWith(`${name}: `) ? why : `${name}: ${why || 'cannot start as configured'}`}; stopping Halo.`;
        // kit: cannotStartReason names a taken port with the system's own code in its line.
        supervisor.giveUp(name, message, why.includes('EADDRINUSE'));
        return;
      }
      const now = Date.now();
      crashes.push(now);
      while (crashes.length && crashes[0]! < now - supervisor.policy.windowMs) crashes.shift();
      const how = signal ?? `code ${code}`;
      const { maxCrashes, windowMs, initialDelayMs, maxDelayMs } = supervisor.policy;
      if (crashes.length >= maxCrashes) {
        supervisor.giveUp(
          name,
          `${name} crashed ${crashes.length} times within ${windowMs / 1000} s (last: ${how}); giving up and stopping Halo.`,
        );
        return;
      }
      const delay = Math.min(initialDelayMs * 2 ** (crashes.length - 1), maxDelayMs);
      supervisor.log(
        `${name} exited unexpectedly (${how}); restarting in ${(delay / 1000).toFixed(1)} s (crash ${crashes.length} of ${maxCrashes} allowed within ${windowMs / 1000} s)`,
      );
      setTimeout(() => {
        if (supervisor.stopping) return;
        proc.child = spawnChild();
        proc.restarts++;
        void waitReady(proc, 60_000, supervisor).then(
          () => supervisor.log(`${name} is back (restart ${proc.restarts})`),
          () => undefined, // its own exit is handled above; giving up stops everything
        );
      }, delay).unref();
    });
    return child;
  };
  /** Processes stopped on purpose (a planned restart): their exit is not a crash. */
  const replaced = new WeakSet<ChildProcess>();
  const replace = async (): Promise<void> => {
    const old = proc.child;
    // Exited on its own: the supervisor's restart is already due (a second process would collide).
    if (old.exitCode !== null || old.signalCode !== null) throw new Error(`${name} is restarting after a crash; try again once it is back`);
    replaced.add(old);
    const exited = new Promise((r) => old.once('exit', r));
    const kill = setTimeout(() => old.kill('SIGKILL'), 15_000);
    old.kill('SIGTERM');
    await exited;
    clearTimeout(kill);
    if (supervisor.stopping) throw new Error('Halo is stopping');
    proc.child = spawnChild();
    await waitReady(proc, 60_000, supervisor);
  };
  const proc: RunningProcess = {
    name,
    child: spawnChild(),
    restarts: 0,
    url,
    readyPath,
    ...(grpcAddr ? { grpcAddr } : {}),
    ...(replica ? { replica } : {}),
    replace,
  };
  running.push(proc);
  return proc;
}

/** The last line of a process's log file (its one-line reason for not starting). */
function linesOf(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n');
  } catch {
    return [];
  }
}

/**
 * GET `url`: true on a 2xx, false on anything else, a refused connection or a timeout. node:http
 * rather than fetch: this polls every process each 100 ms while they start, and fetch's first use
 * alone loads and compiles undici, on a start where eight processes share two cores.
 */
function answersOk(url: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpGet(url, { timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/** The restart under way in each system (its process list), one at a time: systems started side by side do not share it. */
const restarting = new WeakMap<RunningProcess[], string>();

/** `npm run restart -- <service>`: each of its processes replaced in turn, each ready before the next. */
async function restartService(service: string, running: RunningProcess[], log: (line: string) => void): Promise<RestartAnswer> {
  const procs = running.filter((p) => p.name === service).sort((a, b) => (a.replica ?? 0) - (b.replica ?? 0));
  if (procs.length === 0) {
    const names = [...new Set(running.map((p) => p.name))].join(', ');
    throw new Error(`no process named ${service} runs here (${names})`);
  }
  const busy = restarting.get(running);
  if (busy) throw new Error(`${busy} is being restarted; try again when it is done`);
  restarting.set(running, service);
  try {
    const instances: RestartAnswer['instances'] = [];
    for (const proc of procs) {
      const started = Date.now();
      log(`${service}${proc.replica ? ` #${proc.replica + 1}` : ''}: restarting as asked (npm run restart)`);
      await proc.replace();
      instances.push({ instance: (proc.replica ?? 0) + 1, readyMs: Date.now() - started, pid: proc.child.pid });
      log(`${service}${proc.replica ? ` #${proc.replica + 1}` : ''}: ready again (pid ${proc.child.pid})`);
    }
    return { service, instances };
  } finally {
    restarting.delete(running);
  }
}

/** How long "ready" waits for the gateway to serve the registry's composition once every process is up. */
const REGISTRY_ANSWER_WAIT_MS = 15_000;

/** The gateway's `/readyz` body, or null when it does not answer one. */
function readyzOf(url: string, timeoutMs: number): Promise<{ source?: string; registry?: string } | null> {
  return new Promise((resolve) => {
    const req = httpGet(url, { timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body) as { source?: string; registry?: string });
        } catch {
          resolve(null);
        }
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

/** Until the gateway serves the registry's composition (true), or has no registry (true), or the wait ends (false). */
async function servesRegistry(gateway: RunningProcess, timeoutMs: number, supervisor: Supervisor): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (supervisor.gaveUp) throw supervisor.gaveUp;
    if (supervisor.stopping) throw new Error('gateway: stopped before it was ready');
    const readyz = await readyzOf(`${gateway.url}/readyz`, 1_000);
    if (readyz?.registry === 'off' || readyz?.source === 'registry') return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** Until the process answers its ready path; restarts in between are the supervisor's business. */
async function waitReady(proc: RunningProcess, timeoutMs: number, supervisor: Supervisor): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (supervisor.gaveUp) throw supervisor.gaveUp;
    if (supervisor.stopping) throw new Error(`${proc.name}: stopped before it was ready`);
    try {
      const child = proc.child;
      const ok = await answersOk(`${proc.url}${proc.readyPath}`, 1_000);
      // Only our own process's answer counts: not one that exited meanwhile (its port is someone else's).
      if (ok && child === proc.child && child.exitCode === null && child.signalCode === null) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${proc.name} was not ready within ${timeoutMs} ms`);
}

/** How long a process may drain after SIGTERM before it is SIGKILLed. */
const STOP_KILL_MS = 15_000;
/** After this long, the terminal hears which processes the stop is still waiting for. */
const STOP_NOTICE_MS = 5_000;

/**
 * SIGTERM (graceful drain) first, SIGKILL for anything still alive after 15 s. The gateway drains
 * first, so no new request reaches a service; then every service at once, as they started (and as
 * Kubernetes stops a release): a stop is bounded by two drains, not by one per process.
 */
async function stopAll(running: RunningProcess[], log: (line: string) => void): Promise<void> {
  const alive = (p: RunningProcess) => p.child.exitCode === null && p.child.signalCode === null;
  await stopTogether(
    running.filter((p) => p.name === 'gateway' && alive(p)),
    log,
  );
  await stopTogether(
    running.filter((p) => p.name !== 'gateway' && alive(p)),
    log,
  );
}

async function stopTogether(procs: RunningProcess[], log: (line: string) => void): Promise<void> {
  if (!procs.length) return;
  const left = new Set(procs);
  const notice = setTimeout(() => {
    const names = [...left].map((p) => `${p.name}${p.replica ? ` #${p.replica + 1}` : ''} (pid ${p.child.pid})`);
    log(`still draining after ${STOP_NOTICE_MS / 1000} s: ${names.join(', ')}; SIGKILL at ${STOP_KILL_MS / 1000} s`);
  }, STOP_NOTICE_MS);
  await Promise.all(
    procs.map(
      (proc) =>
        new Promise<void>((done) => {
          const kill = setTimeout(() => proc.child.kill('SIGKILL'), STOP_KILL_MS);
          proc.child.once('exit', () => {
            clearTimeout(kill);
            left.delete(proc);
            done();
          });
          proc.child.kill('SIGTERM');
        }),
    ),
  );
  clearTimeout(notice);
}
