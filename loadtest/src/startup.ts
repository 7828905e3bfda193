import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { resolve } from 'node:path';

/**
 * `npm run bench:startup`: how long `npm start` takes until "Halo is ready" — cold (no `.data`)
 * and warm (data present) — and how much memory the idle embedded system holds, per process and
 * in total. Runs the real front door (`node tools/bin/start.js`, build check included) ROUNDS
 * times each, alternating cold and warm, and reports medians. Needs the default ports free, or
HALO_PORT_OFFSET (and HALO_DATA_DIR for a data directory of its own), passed on to `npm start`.
 *
 * Memory: RSS per process (what `ps` shows; shared pages counted in every process that maps them)
 * and PSS summed over the tree (each shared page divided among its sharers), which is what the
 * whole system really costs the machine. Issue 30's figure (goal < 750 MB) is the servers' (every
 * Node process but the launcher) RSS plus PostgreSQL's PSS; it is printed beside the PSS total.
 */
const ROOT = resolve(__dirname, '../..');
const ROUNDS = Number(process.env.STARTUP_ROUNDS ?? 3);
/** Past the launcher's compaction (5 s after ready, and the second collection 6 s later: kit process/compact.ts). */
const IDLE_MS = Number(process.env.STARTUP_IDLE_MS ?? 20_000);
const OUT_DIR = resolve(ROOT, 'loadtest/results');
/** What a cold start removes: `npm start`'s data (HALO_DATA_DIR when set, as the launcher reads it). */
const DATA_DIR = process.env.HALO_DATA_DIR ? resolve(process.env.HALO_DATA_DIR) : resolve(ROOT, '.data');

interface ProcMem {
  pid: number;
  name: string;
  rssMb: number;
  pssMb: number;
}

interface Round {
  kind: 'cold' | 'warm';
  readySeconds: number;
  processes: ProcMem[];
}

function children(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may itself hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function tree(root: number): number[] {
  const all = [root];
  for (let i = 0; i < all.length; i++) all.push(...children(all[i]!));
  return all;
}

function nameOf(pid: number): string {
  const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  // The last script: a bundle run with its code cache comes after tools/dist/code-cache.js (ADR 0012).
  const script = [...cmd].reverse().find((a) => a.endsWith('.js'));
  if (script) {
    const m = /services\/(\w+)\/dist|(gateway)\/dist|tools\/dist\/(dev-oidc)|tools\/(?:bin|dist)\/(start)/.exec(script);
    return m ? (m[1] ?? m[2] ?? m[3] ?? 'launcher').replace('start', 'launcher') : script;
  }
  if (cmd[0]?.endsWith('/postgres')) return 'postgres';
  return cmd[0]?.startsWith('postgres:') ? 'postgres' : (cmd[0] ?? String(pid));
}

function memOf(pid: number): { rss: number; pss: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
  return { rss: kb('Rss') / 1024, pss: kb('Pss') / 1024 };
}

async function round(kind: Round['kind']): Promise<Round> {
  if (kind === 'cold') rmSync(DATA_DIR, { recursive: true, force: true });
  const started = performance.now();
  const child = spawn(process.execPath, [resolve(ROOT, 'tools/bin/start.js')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const readySeconds = await new Promise<number>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`not ready after 120 s:\n${output.slice(-2000)}`)), 120_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Halo is ready')) {
        clearTimeout(timer);
        ok((performance.now() - started) / 1000);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`npm start exited (${code}):\n${output.slice(-2000)}`)));
  });
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const processes: ProcMem[] = [];
  for (const pid of tree(child.pid!)) {
    try {
      const m = memOf(pid);
      processes.push({ pid, name: nameOf(pid), rssMb: m.rss, pssMb: m.pss });
    } catch {
      // gone
    }
  }
  child.removeAllListeners('exit');
  await new Promise<void>((done) => {
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
  return { kind, readySeconds, processes };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** One row per kind of process: postgres backends are summed into one "postgres" row. */
function byName(processes: ProcMem[]): Map<string, { rss: number; pss: number; count: number }> {
  const rows = new Map<string, { rss: number; pss: number; count: number }>();
  for (const p of processes) {
    const row = rows.get(p.name) ?? { rss: 0, pss: 0, count: 0 };
    // A service's RSS is its own; postgres is many processes sharing one buffer pool, so only PSS adds up.
    row.rss = p.name === 'postgres' ? row.rss + p.rssMb : Math.max(row.rss, p.rssMb);
    row.pss += p.pssMb;
    row.count++;
    rows.set(p.name, row);
  }
  return rows;
}

/** The Node servers' RSS (not the launcher's) plus PostgreSQL's PSS (its shared buffers once), MB. */
function serversFigure(processes: ProcMem[]): number {
  let mb = 0;
  for (const p of processes) {
    if (p.name === 'postgres') mb += p.pssMb;
    else if (p.name !== 'launcher' && p.name !== 'sh') mb += p.rssMb;
  }
  return mb;
}

async function main(): Promise<void> {
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    for (const kind of ['cold', 'warm'] as const) {
      const r = await round(kind);
      rounds.push(r);
      const total = r.processes.reduce((s, p) => s + p.pssMb, 0);
      const figure = serversFigure(r.processes).toFixed(0);
      process.stdout.write(
        `round ${i + 1} ${kind}: ready in ${r.readySeconds.toFixed(1)} s, ${total.toFixed(0)} MB PSS in all, servers' RSS + PostgreSQL's PSS ${figure} MB\n`,
      );
    }
  }
  const cold = median(rounds.filter((r) => r.kind === 'cold').map((r) => r.readySeconds));
  const warm = median(rounds.filter((r) => r.kind === 'warm').map((r) => r.readySeconds));
  const warmRounds = rounds.filter((r) => r.kind === 'warm');
  const names = [...byName(warmRounds[0]!.processes).keys()];
  const lines = [
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}; ${ROUNDS} rounds, medians.`,
    '',
    `| start | until "Halo is ready" |`,
    `|---|---|`,
    `| cold (\`.data\` absent, build up to date) | ${cold.toFixed(1)} s |`,
    `| warm (data present) | ${warm.toFixed(1)} s |`,
    '',
    `| process (idle, ${IDLE_MS / 1000} s after ready) | RSS MB | PSS MB |`,
    `|---|---|---|`,
  ];
  let total = 0;
  for (const name of names) {
    const rows = warmRounds.map((r) => byName(r.processes).get(name)).filter((x) => x !== undefined);
    const rss = median(rows.map((x) => x.rss));
    const pss = median(rows.map((x) => x.pss));
    total += pss;
    const count = rows[0]!.count > 1 ? ` (${rows[0]!.count} processes, RSS summed)` : '';
    lines.push(`| ${name}${count} | ${rss.toFixed(0)} | ${pss.toFixed(0)} |`);
  }
  lines.push(`| **whole system** | | **${total.toFixed(0)}** |`);
  const servers = warmRounds.map((r) => serversFigure(r.processes));
  lines.push(
    '',
    `Servers' RSS (every Node process but the launcher) + PostgreSQL's PSS, each warm round: ${servers.map((x) => x.toFixed(0)).join(', ')} MB (median ${median(servers).toFixed(0)}).`,
  );
  const table = lines.join('\n');
  process.stdout.write(`\n${table}\n`);
  if (!existsSync(OUT_DIR)) mkdirSync(OUT_DIR, { recursive: true });
  writeFileSync(resolve(OUT_DIR, 'startup.json'), JSON.stringify({ cold, warm, rounds }, null, 2));
  writeFileSync(resolve(OUT_DIR, 'startup.md'), `${table}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
