import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { GATEWAY_PORT, SERVICES } from '@halo/kit/launch';
import { metricValue, TEST_DATABASE_URL } from '@halo/kit/testing';
import { freeOffset, startE2ESystem } from './helpers';

/**
 * `npm start` as a newcomer meets it (tools/dist/start.js, real processes): a launcher killed with
 * SIGKILL leaves nothing running, and what a stuck service still holds is reaped by the next
 * start; a second start beside a running one says one line and starts nothing; a DATABASE_URL
 * that can never work is one line and no restarts, and the README's example works as printed.
 */
const root = mkdtempSync(join(tmpdir(), 'halo-e2e-launcher-'));
// Run as root, the embedded PostgreSQL runs as user postgres, which must reach its data directory.
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
  output: () => string;
  /** The gateway's address, as `npm start` printed it once ready. */
  gateway: () => string;
}

function npmStart(offset: number, env: Record<string, string>): Started {
  const child = spawn(process.execPath, [resolve(__dirname, '../tools/dist/start.js')], {
    env: { ...process.env, DATABASE_URL: '', HALO_ENV: 'development', HALO_PORT_OFFSET: String(offset), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const ready = new Promise<void>((ok, fail) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Halo is ready')) ok();
    });
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) => fail(new Error(`npm start exited (${code}):\n${out.slice(-3000)}`)));
  });
  ready.catch(() => undefined);
  const gateway = () => /Gateway, REST \+ GraphQL\s+(\S+)/.exec(out)?.[1] ?? 'http://npm-start-printed-no-gateway.invalid';
  return { child, ready, exited, output: () => out, gateway };
}

/** pid → start time (/proc/<pid>/stat field 22) of `pid` and every process below it. */
function tree(pid: number): Map<number, string> {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = stat(Number(entry));
    if (fields) parents.set(Number(fields[1]), [...(parents.get(Number(fields[1])) ?? []), Number(entry)]);
  }
  const found = new Map<number, string>();
  const walk = (p: number) => {
    const fields = stat(p);
    if (fields) found.set(p, fields[19]!);
    for (const c of parents.get(p) ?? []) walk(c);
  };
  walk(pid);
  return found;
}

/** The fields after the command name (state first), or undefined when gone or a zombie. */
function stat(pid: number): string[] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields;
  } catch {
    return undefined;
  }
}

const stillRunning = (procs: Map<number, string>) => [...procs].filter(([pid, start]) => stat(pid)?.[19] === start).map(([pid]) => pid);

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');

it('leaves no process behind when the launcher is killed, reaps a stuck one on the next start, and refuses a second start', async () => {
  const dataDir = join(root, 'killed');
  const offset = await freeOffset();
  const first = npmStart(offset, { HALO_DATA_DIR: dataDir });
  await first.ready;
  const launcher = first.child.pid!;
  const procs = tree(launcher);
  procs.delete(launcher);
  // Six services and the gateway, the dev OpenID provider, PostgreSQL (and its backends), its watchdog.
  expect(procs.size).toBeGreaterThanOrEqual(9);
  // A service that cannot react (stopped) stands for one stuck in its drain.
  const content = [...procs.keys()].find((pid) => /services\/content\/dist\/main(\.bundle)?\.js/.test(cmdline(pid)))!;
  process.kill(content, 'SIGSTOP');
  const others = new Map([...procs].filter(([pid]) => pid !== content));

  first.child.kill('SIGKILL');
  await first.exited;
  // Every other process notices within its 3 s drain (PostgreSQL after the services' drain).
  await until(() => stillRunning(others).length === 0, 8_000);
  expect(stillRunning(others).map((pid) => `${pid} ${cmdline(pid)}`)).toEqual([]);
  expect(stillRunning(new Map([[content, procs.get(content)!]]))).toEqual([content]);

  const second = npmStart(offset, { HALO_DATA_DIR: dataDir });
  try {
    await second.ready;
    expect(second.output()).toContain(`stopping content (pid ${content}) left running by an earlier launcher`);
    expect(stat(content)).toBeUndefined();
    expect((await fetch(`${second.gateway()}/hello`)).status).toBe(200);

    // The same checkout again, and another checkout on the same ports: one line each, nothing started.
    for (const [env, says] of [
      [
        { HALO_DATA_DIR: dataDir },
        /^Halo failed to start: Halo is already running here \(launcher pid \d+\); stop it first, or start another beside it with HALO_PORT_OFFSET=100 /,
      ],
      [
        { HALO_DATA_DIR: join(root, 'other') },
        new RegExp(
          `^Halo failed to start: Ports already in use: ${GATEWAY_PORT + offset} \\(gateway\\), .*${SERVICES.auth.httpPort + offset} \\(auth HTTP\\).* HALO_PORT_OFFSET=100 npm start$`,
        ),
      ],
    ] as const) {
      const third = npmStart(offset, env);
      expect(await third.exited).not.toBe(0);
      expect(third.output().trim().split('\n')).toEqual([expect.stringMatching(says)]);
    }
    expect((await fetch(`${second.gateway()}/hello`)).status).toBe(200);
  } finally {
    const running = tree(second.child.pid!);
    second.child.kill('SIGTERM');
    await second.exited;
    await until(() => stillRunning(running).length === 0, 5_000);
    expect(stillRunning(running)).toEqual([]);
  }
}, 180_000);

it('runs every process from its bundle, and opens no circuit breaker while auth waits for a late content', async () => {
  // content blocks 3 s before it even loads: auth's seed asks it for the demo users meanwhile.
  const slow = join(root, 'slow-start.js');
  writeFileSync(slow, 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000);\n');
  const sys = await startE2ESystem({ envFor: { content: { NODE_OPTIONS: `--require ${slow}` } } });
  try {
    // Start-up is CPU-bound: each process runs the one file `npm run build` bundled for it (ADR 0010).
    const commands = sys.system.processes.map((p) => cmdline(p.child.pid!));
    expect(commands).toHaveLength(7);
    for (const command of commands) expect(command).toMatch(/\/dist\/(main|dev-oidc)\.bundle\.js $/);
    const metrics = await (await fetch(`${sys.direct('auth')}/metrics`)).text();
    expect(metricValue(metrics, 'halo_grpc_client_breaker_opened_total')).toBe(0);
    expect(sys.logs.filter((l) => l.includes('circuit opened'))).toEqual([]);
    // The seed did reach content: the demo credentials work.
    const login = await fetch(`${sys.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'alice@halo.local', password: 'password123' }),
    });
    expect(login.status).toBe(200);
  } finally {
    await sys.stop();
  }
}, 120_000);

it('on the OS’s ports: one taken by another program before its process listened means a new start on new ones', async () => {
  // What a parallel run's listen(0) may do between the launcher's choice and the bind, here on purpose.
  // It hangs up on whoever calls (the launcher's readiness checks), so that closing it waits for nobody.
  const intruder = createServer((socket) => socket.destroy());
  let taken: string | undefined;
  const sys = await startE2ESystem({
    postgres: true, // two starts: no embedded PostgreSQL to set up for them
    onStarting: async ({ services }) => {
      if (taken) return;
      taken = services.catalog.url;
      await new Promise<void>((listening) => intruder.listen(Number(new URL(taken!).port), '127.0.0.1', listening));
    },
  });
  try {
    expect(sys.logs.filter((l) => l.includes('another program took a port'))).toEqual([
      expect.stringMatching(
        /^launcher\| .*\(catalog: port \d+ is already in use .*EADDRINUSE.*\); starting again on new ports \(attempt 2 of 3\)$/,
      ),
    ]);
    expect(sys.direct('catalog')).not.toBe(taken);
    expect(sys.system.services.catalog.url).toBe(sys.direct('catalog'));
    expect((await fetch(`${sys.url}/products?limit=1`)).status).toBe(200);
  } finally {
    await sys.stop();
    await new Promise((closed) => intruder.close(closed));
  }
}, 180_000);

it('the second start compiles from the V8 code cache, and a damaged cache only means compiling again', async () => {
  // Every bundled process's cache, in a directory of this test's own (HALO_CODE_CACHE_DIR): the
  // suites that start a system beside it would otherwise rewrite the caches this test damages.
  const dir = mkdtempSync(join(tmpdir(), 'halo-code-cache-'));
  const caches = () =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.v8cache'))
      .map((f) => join(dir, f));
  const env = { HALO_CODE_CACHE_DIR: dir };
  const envFor = Object.fromEntries(['gateway', 'auth', 'content', 'catalog', 'payments', 'chat', 'registry'].map((name) => [name, env]));
  const start = async (): Promise<string> => {
    const sys = await startE2ESystem({ envFor });
    try {
      await until(() => sys.logs.some((l) => l.includes('V8 code cache:')), 60_000);
      // Still serving, whatever the cache: the demo credentials work.
      const login = await fetch(`${sys.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'alice@halo.local', password: 'password123' }),
      });
      expect(login.status).toBe(200);
      return sys.logs.find((l) => l.includes('V8 code cache:'))!;
    } finally {
      await sys.stop();
    }
  };

  expect(await start()).toContain('V8 code cache: 0 of 7 processes started from it (written for 7)');
  expect(caches()).toHaveLength(7);
  expect(await start()).toContain('V8 code cache: 7 of 7 processes started from it');

  // One cache with its bytes damaged (V8 itself would abort on them), one that is not a cache at all.
  const [damaged, foreign] = caches().filter((f) => /services__(content|auth)__/.test(f));
  const bytes = readFileSync(damaged!);
  for (let i = bytes.length - 1000; i < bytes.length; i++) bytes[i] = bytes[i]! ^ 0x5a;
  writeFileSync(damaged!, bytes);
  writeFileSync(foreign!, 'not a code cache\n');
  expect(await start()).toContain('V8 code cache: 5 of 7 processes started from it (2 made for another build or damaged, written for 2)');
  expect(await start()).toContain('V8 code cache: 7 of 7 processes started from it');
  rmSync(dir, { recursive: true, force: true });
}, 300_000);

describe('DATABASE_URL', () => {
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  const urlFor = (database: string, user?: string) => {
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${database}`;
    if (user) {
      url.username = user;
      url.password = '';
    }
    return url.href;
  };

  it("the README's example works as printed: a missing database is created", async () => {
    const database = `halo_e2e_${randomBytes(4).toString('hex')}`;
    // On this machine: postgres://postgres@127.0.0.1:5432/<database>, the README's shape.
    const run = npmStart(await freeOffset(), { DATABASE_URL: urlFor(database), HALO_DATA_DIR: join(root, 'readme') });
    try {
      await run.ready;
      expect(run.output()).toContain(`created database "${database}"`);
      expect(await (await fetch(`${run.gateway()}/hello`)).json()).toEqual({ message: 'Halo Dunia!' });
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
      await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    }
  }, 120_000);

  it('that can never work is one line, and nothing is started or restarted', async () => {
    const role = `halo_e2e_nocreate_${randomBytes(4).toString('hex')}`;
    await admin(`CREATE ROLE ${role} LOGIN NOCREATEDB`);
    try {
      const cases: [string, RegExp][] = [
        [
          urlFor('halo_e2e_missing', role),
          new RegExp(
            `^Halo failed to start: Database "halo_e2e_missing" does not exist on .* and role "${role}" may not create it .*; create it with: psql `,
          ),
        ],
        ['postgres://postgres@127.0.0.1:1/halo', /^Halo failed to start: Nothing answers on 127\.0\.0\.1:1 \(DATABASE_URL\)/],
        [
          'postgres://postgres@halo-no-such-host.invalid:5432/halo',
          /^Halo failed to start: Unknown host in DATABASE_URL: halo-no-such-host\.invalid$/,
        ],
      ];
      for (const [url, says] of cases) {
        const run = npmStart(await freeOffset(), { DATABASE_URL: url, HALO_DATA_DIR: join(root, 'never') });
        expect(await run.exited).not.toBe(0);
        expect(run.output().trim().split('\n')).toEqual([expect.stringMatching(says)]);
      }
    } finally {
      await admin(`DROP ROLE IF EXISTS ${role}`);
    }
  }, 60_000);
});
