import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU pinning and per-process accounting from /proc, for the paired benchmark: the load generator
 * (autocannon, inside the bench process) on one CPU, every server process on another, so neither
 * steals the other's cycles and the ratios measure the servers alone. Linux only (taskset from
 * util-linux, /proc).
 */
export interface Pinning {
  enabled: boolean;
  /** The bench process (load generator) runs here. */
  loadCpu?: number;
  /** Every server process runs here. */
  serverCpu?: number;
  /** One line for the report: what was pinned where, or why nothing was. */
  describe: string;
}

/** `0-3,5` → [0, 1, 2, 3, 5]. */
export function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    if (!part) continue;
    const [a, b] = part.split('-').map(Number);
    if (!Number.isInteger(a)) continue;
    for (let c = a!; c <= (Number.isInteger(b) ? b! : a!); c++) cpus.push(c);
  }
  return cpus;
}

function statusField(pid: number | 'self', key: string, task?: number): string | undefined {
  const path = task === undefined ? `/proc/${pid}/status` : `/proc/${pid}/task/${task}/status`;
  return new RegExp(`^${key}:\\s*(.*)$`, 'm').exec(readFileSync(path, 'utf8'))?.[1]?.trim();
}

/** The CPUs this process may run on, the first two of which the benchmark uses. */
export function planPinning(generator = 'this process, autocannon'): Pinning {
  const allowed = parseCpuList(statusField('self', 'Cpus_allowed_list') ?? '');
  if (allowed.length < 2) {
    return { enabled: false, describe: `not pinned: only ${allowed.length} CPU available (load generator and servers share it)` };
  }
  if (spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status !== 0) {
    return { enabled: false, describe: 'not pinned: taskset (util-linux) not found' };
  }
  const [loadCpu, serverCpu] = allowed as [number, number];
  return {
    enabled: true,
    loadCpu,
    serverCpu,
    describe: `load generator (${generator}) on CPU ${loadCpu}; every server process on CPU ${serverCpu} (taskset -a)`,
  };
}

/** Every thread of `pid` (taskset -a) onto `cpu`; threads created later inherit it. */
export function pin(pid: number, cpu: number): void {
  execFileSync('taskset', ['-a', '-cp', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** The descendants of `pid` (children, grandchildren, …) from /proc, e.g. PostgreSQL's backends. */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may contain spaces and parentheses: fields start after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const [child, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/** `pid` and all its descendants onto `cpu`; answers the pids pinned. */
export function pinTree(pid: number, cpu: number): number[] {
  const pids = [pid, ...descendants(pid)];
  const pinned: number[] = [];
  for (const p of pids) {
    try {
      pin(p, cpu);
      pinned.push(p);
    } catch (err) {
      // A backend that exited between the scan and taskset; the root must succeed.
      if (p === pid) throw err;
    }
  }
  return pinned;
}

/**
 * The benchmark's layout: every server (with all its descendants, e.g. PostgreSQL's backends) on
 * the servers' CPU, then the load generator (this process) on its own; then checks every thread of
 * each and throws unless all sit where they should. Answers each process's CPU list for the report.
 */
export function pinServers(
  pinning: Pinning,
  servers: readonly { name: string; pid: number }[],
): { name: string; pid: number; cpus: string }[] {
  if (!pinning.enabled) return [];
  for (const s of servers) pinTree(s.pid, pinning.serverCpu!);
  pin(process.pid, pinning.loadCpu!);
  const check = [
    ...servers.map((s) => ({ ...s, want: pinning.serverCpu! })),
    { name: 'bench (load generator)', pid: process.pid, want: pinning.loadCpu! },
  ];
  return check.map((c) => {
    const lists = threadAffinity(c.pid);
    if (lists.length !== 1 || lists[0] !== String(c.want))
      throw new Error(`${c.name} (pid ${c.pid}) runs on CPUs ${lists.join(' | ')}, not ${c.want}`);
    return { name: c.name, pid: c.pid, cpus: lists.join(' | ') };
  });
}

/** The distinct CPU lists of all threads of `pid` ("1" when every thread is pinned to CPU 1). */
export function threadAffinity(pid: number): string[] {
  const lists = new Set<string>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      lists.add(statusField(pid, 'Cpus_allowed_list', Number(task)) ?? '?');
    } catch {
      // thread gone
    }
  }
  return [...lists];
}

/** Clock ticks per second of /proc/<pid>/stat's utime and stime. */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of the whole process (all its threads, living and exited), in µs. */
export function cpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6;
}

/** Resident set size in MB (VmHWM is the kernel's own peak). */
export function memOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** The node flags a process was started with: its command line between the executable and the script. */
export function nodeFlagsOf(pid: number): string[] {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const script = argv.findIndex((a, i) => i > 0 && !a.startsWith('-'));
  return script === -1 ? [] : argv.slice(1, script);
}
