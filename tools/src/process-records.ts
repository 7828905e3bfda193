import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LaunchError } from './launch-error';

/**
 * What a launcher started, on disk: each process by pid and start time, so the next launcher can
 * stop what an earlier one left (killed with SIGKILL, a service stuck in its drain) and tell a
 * launcher that still runs from one that died. A pid alone is not enough (pids are reused); a pid
 * whose start time matches is the same process. Never by name: another checkout's Halo looks alike.
 */
export interface ProcessRecord {
  name: string;
  pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat, field 22). */
  startTime: number;
}

export interface LauncherRecord {
  launcher: ProcessRecord;
  processes: ProcessRecord[];
  /** Embedded mode: the PostgreSQL data directory this launcher owns. */
  postgresDataDir?: string;
}

/** Where processes cannot be identified (no /proc), nothing is recorded or reaped. */
export const CAN_IDENTIFY = process.platform === 'linux';

/** The start time of `pid`, or undefined when there is no such process (or only its zombie). */
export function startTimeOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name (which may hold spaces): state is field 3,
    // starttime field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : Number(fields[19]);
  } catch {
    return undefined;
  }
}

/** Still the process that was recorded (not gone, not a new one under a reused pid). */
export const isRunning = (r: ProcessRecord): boolean => startTimeOf(r.pid) === r.startTime;

export function record(name: string, pid: number): ProcessRecord | undefined {
  const startTime = startTimeOf(pid);
  return startTime === undefined ? undefined : { name, pid, startTime };
}

export function readRecord(file: string): LauncherRecord | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LauncherRecord;
  } catch {
    return undefined;
  }
}

/** Written whole and renamed into place: a launcher killed mid-write leaves the previous file. */
export function writeRecord(file: string, rec: LauncherRecord): void {
  if (!CAN_IDENTIFY) return;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, JSON.stringify(rec));
  renameSync(`${file}.tmp`, file);
}

/**
 * Stops the processes of `rec` that still run: SIGTERM, then SIGKILL for any still there after
 * `graceMs`. Resolves with what it stopped.
 */
export async function reap(rec: LauncherRecord, log: (line: string) => void, graceMs = 3_000): Promise<ProcessRecord[]> {
  const left = rec.processes.filter(isRunning);
  for (const p of left) {
    log(`stopping ${p.name} (pid ${p.pid}) left running by an earlier launcher`);
    signal(p.pid, 'SIGTERM');
  }
  const deadline = Date.now() + graceMs;
  while (left.some(isRunning) && Date.now() < deadline) await sleep(50);
  for (const p of left.filter(isRunning)) signal(p.pid, 'SIGKILL');
  while (left.some(isRunning)) await sleep(20);
  // A killed Node process shows as a zombie once its main thread is gone, while its other threads
  // may still be exiting with its sockets open: wait (bounded) until no thread is left.
  const settled = Date.now() + 2_000;
  while (left.some((p) => threadsLeft(p.pid) > 1) && Date.now() < settled) await sleep(20);
  return left;
}

/** How many threads of `pid` still exist (0 when it is gone). */
function threadsLeft(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone in between
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Before anything starts: a launcher of this checkout that still runs on these ports (or on this
 * PostgreSQL data directory) is refused with one line; processes a dead launcher left are stopped.
 */
export async function takeOver(recordFile: string, postgresDataDir: string | undefined, log: (line: string) => void): Promise<number> {
  if (!CAN_IDENTIFY) return 0;
  const dir = dirname(recordFile);
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => RECORD_FILE.test(f));
  } catch {
    return 0; // no state directory yet: nothing ever ran here
  }
  let reaped = 0;
  for (const file of files) {
    const path = join(dir, file);
    const rec = readRecord(path);
    if (!rec) continue;
    // This very process (tests run systems one after another) is not "another launcher".
    const other = rec.launcher.pid !== process.pid && isRunning(rec.launcher);
    if (other && path === recordFile) {
      throw new LaunchError(
        `Halo is already running here (launcher pid ${rec.launcher.pid}); stop it first, or start another beside it with HALO_PORT_OFFSET=100 HALO_DATA_DIR=/tmp/halo-2 npm start`,
      );
    }
    if (other && postgresDataDir !== undefined && rec.postgresDataDir === postgresDataDir) {
      throw new LaunchError(
        `The PostgreSQL data in ${postgresDataDir} is in use by another Halo launcher (pid ${rec.launcher.pid}); stop it, or give this one its own: HALO_DATA_DIR=/tmp/halo-2 npm start`,
      );
    }
    if (other || rec.launcher.pid === process.pid) continue;
    if (path === recordFile) reaped += (await reap(rec, log)).length;
    else if (file.startsWith('launcher-auto-')) {
      // A system on the OS's ports has a record of its own name, which no later start reuses: what its
      // dead launcher left is stopped by whichever start comes next.
      await reap(rec, log);
      rmSync(path, { force: true });
      rmSync(path.replace(/\.json$/, '.sock'), { force: true });
    }
  }
  return reaped;
}

/** `launcher-<offset>.json` of a system on fixed ports, `launcher-auto-<pid>-<hex>.json` of one on the OS's. */
const RECORD_FILE = /^launcher-(\d+|auto-\d+-[0-9a-f]+)\.json$/;
