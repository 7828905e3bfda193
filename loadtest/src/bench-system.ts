import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSystem, type RunningSystem } from '@halo/tools';
import { benchSystemEnv, type ExtraProcess } from './gateways-bench';
import { pin, pinServers, planPinning, type Pinning } from './pin';

/**
 * Halo started as every pinned bench starts it: embedded PostgreSQL in a temp directory, the bench
 * environment (`benchSystemEnv`: production mode, the production log level), each process's output
 * in `logDir`, the launcher's in `<logDir>/launcher.log`. While the system starts this process sits
 * on the servers' CPU (what it spawns inherits that); `pinAll` then pins every server, PostgreSQL
 * and any extra processes to it and this process to the load generator's CPU.
 */
export interface BenchSystem {
  system: RunningSystem;
  pinning: Pinning;
  /** A temp directory for the run's files (removed by `stop`). */
  dataDir: string;
  pinAll(extra?: readonly ExtraProcess[]): void;
  stop(): Promise<void>;
}

export async function startBenchSystem(opts: {
  name: string;
  portOffset: number;
  jwtSecret: string;
  logDir: string;
  /** What the load generator is, for the pinning line (default: autocannon in this process). */
  generator?: string;
  envFor?: NonNullable<Parameters<typeof startSystem>[0]>['envFor'];
  log: (line: string) => void;
}): Promise<BenchSystem> {
  delete process.env.DATABASE_URL; // the embedded PostgreSQL, as bench:ab
  const dataDir = mkdtempSync(join(tmpdir(), `halo-${opts.name}-`));
  chmodSync(dataDir, 0o755); // the embedded PostgreSQL may run as user postgres
  mkdirSync(opts.logDir, { recursive: true });
  const launcherLog = openSync(join(opts.logDir, 'launcher.log'), 'w');
  const pinning = planPinning(opts.generator);
  opts.log(`bench:${opts.name}: ${pinning.describe}`);
  if (pinning.enabled) pin(process.pid, pinning.serverCpu!);
  const cleanUp = () => {
    closeSync(launcherLog);
    rmSync(dataDir, { recursive: true, force: true });
  };
  let system: RunningSystem;
  try {
    system = await startSystem({
      portOffset: opts.portOffset,
      devOidc: false,
      env: benchSystemEnv(opts.jwtSecret),
      postgresDataDir: join(dataDir, 'postgres'),
      ...(opts.envFor ? { envFor: opts.envFor } : {}),
      logDir: opts.logDir,
      onLog: (name, line) => writeSync(launcherLog, `${name}| ${line}\n`),
    });
  } catch (err) {
    cleanUp();
    throw err;
  }
  return {
    system,
    pinning,
    dataDir,
    pinAll: (extra = []) =>
      void pinServers(pinning, [
        ...system.processes.map((p) => ({ name: p.replica ? `${p.name}-${p.replica}` : p.name, pid: p.child.pid! })),
        ...extra.map((p) => ({ name: p.name, pid: p.child.pid! })),
        ...(system.postgres ? [{ name: 'postgres', pid: system.postgres.child.pid! }] : []),
      ]),
    stop: async () => {
      try {
        await system.stop();
      } finally {
        cleanUp();
      }
    },
  };
}
