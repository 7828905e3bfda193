import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import {
  defaultServiceUrl,
  GATEWAY_PORT,
  SERVICE_NAMES,
  SERVICES,
  serviceUrlVar,
  type ServiceName,
} from '@halo/kit';

/**
 * Starts Halo as separate processes on loopback — every service, then the gateway — and waits
 * until each answers `/readyz`. `npm start`, the e2e suite and the benchmark all use this, so
 * the way Halo is started in tests is the way a newcomer starts it.
 */
const ROOT = resolve(__dirname, '../..');

export type ProcessName = ServiceName | 'gateway';

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
}

export interface RunningProcess {
  name: ProcessName;
  child: ChildProcess;
  url: string;
  grpcAddr?: string;
}

export interface RunningSystem {
  gatewayUrl: string;
  processes: RunningProcess[];
  stop(): Promise<void>;
}

const entry = (name: ProcessName) =>
  name === 'gateway' ? resolve(ROOT, 'gateway/dist/main.js') : resolve(ROOT, 'services', name, 'dist/main.js');

export async function startSystem(opts: LaunchOptions = {}): Promise<RunningSystem> {
  const offset = opts.portOffset ?? 0;
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const running: RunningProcess[] = [];
  const stop = () => stopAll(running);
  const serviceUrls: Record<string, string> = {};

  try {
    const services = SERVICE_NAMES.map((name) => {
      const http = SERVICES[name].httpPort + offset;
      const grpc = SERVICES[name].grpcPort + offset;
      const url = `http://127.0.0.1:${http}`;
      serviceUrls[serviceUrlVar(name)] = url;
      return launch(name, { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(http), GRPC_PORT: String(grpc) }, url, opts, running, `127.0.0.1:${grpc}`);
    });
    await Promise.all(services.map((p) => waitReady(p, readyTimeoutMs)));

    const gwPort = GATEWAY_PORT + offset;
    const gateway = launch(
      'gateway',
      { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(gwPort), ...serviceUrls },
      `http://127.0.0.1:${gwPort}`,
      opts,
      running,
    );
    await waitReady(gateway, readyTimeoutMs);
    return { gatewayUrl: gateway.url, processes: running, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function launch(
  name: ProcessName,
  ports: Record<string, string>,
  url: string,
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
  const proc: RunningProcess = { name, child, url, ...(grpcAddr ? { grpcAddr } : {}) };
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
      const res = await fetch(`${proc.url}/readyz`, { signal: AbortSignal.timeout(1_000) });
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

export { defaultServiceUrl };
