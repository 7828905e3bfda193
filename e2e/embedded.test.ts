import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { bearer, freeOffset, startE2ESystem } from './helpers';

/**
 * The front door: with no DATABASE_URL the launcher runs one embedded PostgreSQL, each service
 * on its own role and schema; it seeds the demo data, a restart on the same data directory
 * neither duplicates nor loses rows, a launcher killed with SIGKILL leaves nothing that blocks
 * the next start, and two systems on one machine do not collide.
 */
const root = mkdtempSync(join(tmpdir(), 'halo-e2e-embedded-'));
// Run as root, the embedded PostgreSQL runs as user postgres, which must reach its data directory.
chmodSync(root, 0o755);

afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Every user with their posts and each post's comments. Emails are shown to admins only (the
 * system's own JWT_SECRET signs the token; `npm start`'s dev secret does not, so there they read "").
 * Comments come through the posts connection: users → posts → comments, three nested lists, would
 * be over the gateway's cost limit (GRAPHQL_MAX_COST); so would a page of 100 posts with their
 * comments (100 × 10 assumed). The demo data has far fewer than 50 posts.
 */
async function snapshot(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: '{ users { email role posts { id } } posts(first: 50) { edges { node { id comments { id } } } } }' }),
  });
  const { data } = (await res.json()) as {
    data: {
      users: { email: string; role: string; posts: { id: string }[] }[];
      posts: { edges: { node: { id: string; comments: unknown[] } }[] };
    };
  };
  const comments = new Map(data.posts.edges.map((e) => [e.node.id, e.node.comments]));
  return data.users.map((u) => ({ ...u, posts: u.posts.map((p) => ({ ...p, comments: comments.get(p.id) ?? [] })) }));
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

it('seeds and serves; each service role sees only its own schema; a restart keeps the data and rotates passwords', async () => {
  const dataDir = join(root, 'restart');
  const first = await startE2ESystem({ dataDir });
  let before;
  let oldContentUrl: string;
  try {
    expect(await (await fetch(`${first.url}/hello`)).json()).toEqual({ message: 'Halo Dunia!' });
    // Ready means the gateway serves the registry's composition, not the files it booted from.
    expect(await (await fetch(`${first.url}/readyz`)).json()).toMatchObject({ status: 'ready', source: 'registry', registry: 'ok' });
    before = await snapshot(first.url, bearer('1', 'Admin', 'admin'));
    expect(before.map((u) => u.email)).toEqual(expect.arrayContaining(['admin@halo.local', 'alice@halo.local', 'bob@halo.local']));
    expect(before.find((u) => u.email === 'admin@halo.local')?.role).toBe('admin');
    for (const u of before) expect(u.posts.length).toBeGreaterThan(0);
    expect(before.flatMap((u) => u.posts).some((p) => p.comments.length > 0)).toBe(true);

    const urls = first.system.postgres!.databaseUrls;
    oldContentUrl = urls.content;
    expect(new URL(urls.content).username).toBe('content');
    expect(await query(urls.content, 'SELECT count(*)::int AS n FROM users')).toEqual([{ n: before.length }]);
    await expect(query(urls.content, 'SELECT * FROM auth.credentials')).rejects.toThrow(/permission denied for schema auth/);
    await expect(query(urls.auth, 'SELECT * FROM content.users')).rejects.toThrow(/permission denied for schema content/);
    await expect(query(urls.catalog, 'CREATE TABLE public.t (v int)')).rejects.toThrow(/permission denied for schema public/);
  } finally {
    await first.stop();
  }
  const second = await startE2ESystem({ dataDir });
  try {
    expect(await snapshot(second.url, bearer('1', 'Admin', 'admin'))).toEqual(before);
    // Every start hands out new passwords: a URL from an earlier run no longer opens anything.
    const stale = new URL(oldContentUrl);
    stale.port = String(second.system.postgres!.port);
    await expect(query(stale.href, 'SELECT 1')).rejects.toThrow(/password authentication failed/);
    expect(await query(second.system.postgres!.databaseUrls.content, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  } finally {
    await second.stop();
  }
}, 120_000);

/** `npm start` itself (built), as a separate process tree, on its own ports and data directory. */
function npmStart(offset: number, dataDir: string): { child: ChildProcess; ready: Promise<void>; gateway: () => string } {
  const child = spawn(process.execPath, [resolve(__dirname, '../tools/dist/start.js')], {
    env: {
      ...process.env,
      DATABASE_URL: '',
      HALO_ENV: 'development',
      HALO_PORT_OFFSET: String(offset),
      HALO_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<void>((ok, fail) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Halo is ready')) ok();
    });
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => fail(new Error(`npm start exited (${code}):\n${out.slice(-3000)}`)));
  });
  return { child, ready, gateway: () => gatewayPrinted(out) };
}

/** The gateway's address as `npm start` prints it once ready. */
const gatewayPrinted = (out: string) => /Gateway, REST \+ GraphQL\s+(\S+)/.exec(out)?.[1] ?? 'http://npm-start-printed-no-gateway.invalid';

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once('exit', () => r()));

it('recovers after the launcher is killed with SIGKILL, while another system runs beside it', async () => {
  const dataDir = join(root, 'killed');
  const offset = await freeOffset();
  const first = npmStart(offset, dataDir);
  await first.ready;
  const gateway = first.gateway();
  // A second, independent system on the same machine at the same time: its own Postgres and ports.
  const beside = await startE2ESystem();
  try {
    expect(beside.system.postgres!.port).not.toBe(5432);
    expect(await (await fetch(`${gateway}/hello`)).json()).toEqual({ message: 'Halo Dunia!' });
    expect(await (await fetch(`${beside.url}/hello`)).json()).toEqual({ message: 'Halo Dunia!' });
    const users = await snapshot(gateway);

    first.child.kill('SIGKILL');
    await exited(first.child);
    // The services notice the launcher is gone and stop, freeing their ports; its Postgres is
    // stopped by its watchdog, or by the next start if that comes first (e2e/launcher.test.ts).
    const second = npmStart(offset, dataDir);
    try {
      await second.ready;
      expect(second.gateway()).toBe(gateway);
      expect(await snapshot(gateway)).toEqual(users);
      // The other system was never disturbed.
      expect((await fetch(`${beside.url}/hello`)).status).toBe(200);
    } finally {
      second.child.kill('SIGTERM');
      await exited(second.child);
    }
  } finally {
    first.child.kill('SIGKILL');
    await beside.stop();
  }
}, 150_000);

it('stops everything when `npm start` itself gets SIGTERM (npm and its shell end; the launcher must not run on orphaned)', async () => {
  const dataDir = join(root, 'npm-sigterm');
  const offset = String(await freeOffset());
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: resolve(__dirname, '..'),
    env: { ...process.env, DATABASE_URL: '', HALO_ENV: 'development', HALO_PORT_OFFSET: offset, HALO_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Every process of this system: the launcher and the services carry HALO_DATA_DIR in their
  // environment, Postgres (another user's process, environ unreadable to some) names it in -D.
  const running = () => systemProcesses(dataDir);
  let out = '';
  let atReady: string[] = [];
  await new Promise<void>((ok, fail) => {
    npm.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      // The moment it says so (the last line of its ready message): a SIGTERM then once went
      // unheard, its handlers not yet installed, and the whole system ran on orphaned.
      if (out.includes('Stop with Ctrl+C.') && !atReady.length) {
        atReady = running();
        npm.kill('SIGTERM');
        ok();
      }
    });
    npm.stderr.on('data', (c: Buffer) => (out += c.toString()));
    npm.once('exit', (code) => fail(new Error(`npm start exited (${code}):\n${out.slice(-3000)}`)));
  });
  const gateway = gatewayPrinted(out);
  expect(atReady.length).toBeGreaterThan(8); // npm, its shell, the launcher, 7 processes, Postgres
  // The launcher drains the gateway, then every service at once (each SIGKILLed after 15 s), then
  // PostgreSQL (immediate shutdown after 15 s): about 45 s at worst on a busy disk, so the bound is
  // generous; what must never happen is a process left running.
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    let gatewayUp = true;
    await fetch(`${gateway}/hello`, { signal: AbortSignal.timeout(500) }).catch(() => (gatewayUp = false));
    if (!gatewayUp && running().length === 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  // Named, with what the launcher printed, so a failure says which process outlived it and why.
  const left = running();
  const listing = left.length ? execFileSync('ps', ['-o', 'pid,ppid,etime,stat,args', '-p', left.join(',')], { encoding: 'utf8' }) : '';
  for (const pid of left) killQuietly(Number(pid)); // nothing of a failed run outlives the test
  expect(listing && `${listing}\n--- npm start printed (last 4,000 characters):\n${out.slice(-4000)}`).toBe('');
  await expect(fetch(`${gateway}/hello`, { signal: AbortSignal.timeout(500) })).rejects.toThrow();
}, 200_000);

/** The pids of every process that belongs to the system whose data lives in `dataDir`. */
function systemProcesses(dataDir: string): string[] {
  const mine: string[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      let env = '';
      try {
        env = readFileSync(`/proc/${pid}/environ`, 'utf8');
      } catch {
        // another user's process (Postgres when the tests run as root): its -D names the directory
      }
      if (args.includes(dataDir) || env.split('\0').includes(`HALO_DATA_DIR=${dataDir}`)) mine.push(pid);
    } catch {
      // gone since the listing
    }
  }
  return mine;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
