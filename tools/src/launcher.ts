import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import {
  DEV_OIDC_PORT,
  ensurePgliteTemplate,
  GATEWAY_PORT,
  grpcAddrVar,
  SERVICE_NAMES,
  SERVICES,
  serviceUrlVar,
  type ServiceName,
} from '@halo/kit';
import { DEV_JWT_SECRET, DEV_OIDC_CLIENT_ID, DEV_OIDC_CLIENT_SECRET } from './dev-defaults';

/**
 * Starts Halo as separate processes on loopback — every service and the gateway — and waits
 * until each answers `/readyz`. `npm start`, the e2e suite and the benchmark all use this, so
 * the way Halo is started in tests is the way a newcomer starts it.
 */
const ROOT = resolve(__dirname, '../..');

export type ProcessName = ServiceName | 'gateway' | 'oidc';

export interface LaunchOptions {
  /** Extra environment for every process (on top of this process's environment). */
  env?: Record<string, string | undefined>;
  /** Extra environment for one process. */
  envFor?: Partial<Record<ProcessName, Record<string, string | undefined>>>;
  /** Added to every default port, so a test system can run beside `npm start`. */
  portOffset?: number;
  /** What to do with each log line of the children. */
  onLog?: (name: ProcessName, line: string) => void;
  readyTimeoutMs?: number;
  /**
   * Runs the dev OpenID provider and registers it with auth as provider `dev`. Defaults to on
   * exactly when HALO_ENV is development (the `npm start` default); never meant for production.
   */
  devOidc?: boolean;
}

export interface RunningProcess {
  name: ProcessName;
  child: ChildProcess;
  url: string;
  grpcAddr?: string;
  /** The path that answers 200 once the process is ready. */
  readyPath: string;
}

export interface RunningSystem {
  gatewayUrl: string;
  processes: RunningProcess[];
  stop(): Promise<void>;
}

const entry = (name: ProcessName) =>
  name === 'gateway'
    ? resolve(ROOT, 'gateway/dist/main.js')
    : name === 'oidc'
      ? resolve(ROOT, 'tools/dist/dev-oidc.js')
      : resolve(ROOT, 'services', name, 'dist/main.js');

export async function startSystem(opts: LaunchOptions = {}): Promise<RunningSystem> {
  const offset = opts.portOffset ?? 0;
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const haloEnv = opts.env?.HALO_ENV ?? process.env.HALO_ENV;
  const dev = haloEnv === 'development';
  const running: RunningProcess[] = [];
  const stop = () => stopAll(running);

  // Every process learns every peer's HTTP and gRPC address (e.g. CONTENT_URL, CONTENT_GRPC_ADDR).
  const peers: Record<string, string> = {};
  for (const name of SERVICE_NAMES) {
    peers[serviceUrlVar(name)] = `http://127.0.0.1:${SERVICES[name].httpPort + offset}`;
    peers[grpcAddrVar(name)] = `127.0.0.1:${SERVICES[name].grpcPort + offset}`;
  }
  const gwPort = GATEWAY_PORT + offset;
  const common: Record<string, string | undefined> = {
    ...peers,
    // The dev secret only ever comes from here, and only in development.
    ...(dev && !opts.env?.JWT_SECRET && !process.env.JWT_SECRET ? { JWT_SECRET: DEV_JWT_SECRET } : {}),
  };
  const o = { ...opts, env: { ...common, ...opts.env } };

  try {
    // Embedded mode: one empty PGlite cluster, made once, that every new service database copies.
    const databaseUrl = o.env.DATABASE_URL ?? process.env.DATABASE_URL;
    if (!databaseUrl) {
      const template = resolve(ROOT, '.data', '.pglite-template');
      ensurePgliteTemplate(template);
      o.env = { PGLITE_TEMPLATE_DIR: template, ...o.env };
    }
    const early: RunningProcess[] = [];
    if (opts.devOidc ?? dev) {
      const port = DEV_OIDC_PORT + offset;
      const issuer = `http://127.0.0.1:${port}`;
      const redirect = `http://127.0.0.1:${gwPort}/auth/oauth/dev/callback`;
      early.push(
        launch('oidc', { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(port), DEV_OIDC_CLIENT_ID, DEV_OIDC_CLIENT_SECRET, DEV_OIDC_REDIRECT_URIS: redirect }, issuer, '/.well-known/openid-configuration', o, running),
      );
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
    const services = SERVICE_NAMES.map((name) => {
      const http = SERVICES[name].httpPort + offset;
      const grpc = SERVICES[name].grpcPort + offset;
      return launch(name, { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(http), GRPC_PORT: String(grpc) }, peers[serviceUrlVar(name)]!, '/readyz', o, running, `127.0.0.1:${grpc}`);
    });
    // The gateway needs only its supergraph file to start, so it starts alongside the services;
    // the system is ready when every process is.
    const gateway = launch(
      'gateway',
      { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(gwPort), NODE_OPTIONS: gatewayNodeOptions(o) },
      `http://127.0.0.1:${gwPort}`,
      '/readyz',
      o,
      running,
    );
    await Promise.all([...early, ...services, gateway].map((p) => waitReady(p, readyTimeoutMs)));
    return { gatewayUrl: gateway.url, processes: running, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The gateway allocates fast and briefly under load; capping V8's young generation at 8 MB per
 * semi-space kept its peak RSS well under 300 MB at no measurable throughput cost (docs/benchmarks.md).
 * An explicit NODE_OPTIONS for the gateway wins.
 */
export const GATEWAY_NODE_OPTIONS = '--max-semi-space-size=8';

function gatewayNodeOptions(opts: LaunchOptions): string {
  return opts.envFor?.gateway?.NODE_OPTIONS ?? opts.env?.NODE_OPTIONS ?? process.env.NODE_OPTIONS ?? GATEWAY_NODE_OPTIONS;
}

function launch(
  name: ProcessName,
  ports: Record<string, string>,
  url: string,
  readyPath: string,
  opts: LaunchOptions,
  running: RunningProcess[],
  grpcAddr?: string,
): RunningProcess {
  const child = spawn(process.execPath, [entry(name)], {
    cwd: ROOT,
    env: { ...process.env, ...opts.env, ...opts.envFor?.[name], ...ports },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onLog = opts.onLog ?? (() => undefined);
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on('line', (line) => onLog(name, line));
  }
  const proc: RunningProcess = { name, child, url, readyPath, ...(grpcAddr ? { grpcAddr } : {}) };
  running.push(proc);
  return proc;
}

async function waitReady(proc: RunningProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited (code ${proc.child.exitCode ?? proc.child.signalCode}) before it was ready`);
    }
    try {
      const res = await fetch(`${proc.url}${proc.readyPath}`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${proc.name} was not ready within ${timeoutMs} ms`);
}

/** SIGTERM (graceful drain) first, SIGKILL for anything still alive after 15 s; gateway first. */
async function stopAll(running: RunningProcess[]): Promise<void> {
  const order = [...running].reverse();
  for (const { child } of order) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    await new Promise<void>((done) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(kill);
        done();
      });
      child.kill('SIGTERM');
    });
  }
}

