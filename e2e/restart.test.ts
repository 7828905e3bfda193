import { resolve } from 'node:path';
import { runNodeScript } from '@halo/kit/testing';
import { freeOffset, startE2ESystem } from './helpers';

/**
 * `npm run restart -- <service>` against a running system (docs/local-development.md): the
 * launcher replaces that service's process (a graceful drain, then a new process from the current
 * build), the rest keep running, and it is not counted as a crash — five in a minute would stop
 * Halo. Every process real; the CLI is the built tools/dist/restart.js, which finds the launcher as
 * `npm start` names it: by HALO_PORT_OFFSET, so this system runs on the fixed ports of an offset.
 */
let offset: number;
let sys: Awaited<ReturnType<typeof startE2ESystem>>;

const restart = (...args: string[]) =>
  runNodeScript(resolve(__dirname, '../tools/dist/restart.js'), args, { env: { HALO_PORT_OFFSET: String(offset) } });

const pidOf = (name: string) => sys.system.processes.find((p) => p.name === name)!.child.pid;
const products = async () => (await fetch(`${sys.url}/products?limit=1`)).status;

beforeAll(async () => {
  offset = await freeOffset();
  sys = await startE2ESystem({ portOffset: offset, postgres: true });
}, 180_000);
afterAll(async () => sys?.stop());

it('replaces catalog alone, six times in a row, and none of it counts as a crash', async () => {
  const others = Object.fromEntries(['gateway', 'auth', 'content', 'payments', 'chat', 'registry'].map((n) => [n, pidOf(n)]));
  // More than the crash loop allows (5 within 60 s): a planned restart is not a crash.
  for (let i = 0; i < 6; i++) {
    const before = pidOf('catalog');
    const res = await restart('catalog');
    expect([res.code, res.stderr]).toEqual([0, '']);
    expect(res.stdout).toMatch(/^catalog: restarted, ready in \d+\.\d s \(pid \d+\)\n$/);
    expect(pidOf('catalog')).not.toBe(before);
    expect(await products()).toBe(200);
  }
  expect(sys.system.processes.find((p) => p.name === 'catalog')!.restarts).toBe(0);
  expect(Object.fromEntries(Object.keys(others).map((n) => [n, pidOf(n)]))).toEqual(others);
}, 180_000);

it('an unknown service is refused (exit 1) naming what runs; bad usage exits 2', async () => {
  const unknown = await restart('nosuch');
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/^restart: no process named nosuch runs here \(.*catalog.*\)\n$/);
  expect((await restart()).code).toBe(2);
  expect((await restart('Catalog;rm')).code).toBe(2);
});

it('with no npm start on that offset: exit 3 and one line', async () => {
  const { code, stderr } = await runNodeScript(resolve(__dirname, '../tools/dist/restart.js'), ['catalog'], {
    env: { HALO_PORT_OFFSET: String(offset + 1) },
  });
  expect(code).toBe(3);
  expect(stderr).toMatch(
    new RegExp(
      `^restart: no npm start of this checkout runs with HALO_PORT_OFFSET=${offset + 1} \\(nothing listens on .*launcher-${offset + 1}\\.sock\\)\n$`,
    ),
  );
});
