import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';

/**
 * A process the launcher spawns before its database exists (late-env.ts): it waits for the rest
 * of its environment over IPC, and starts with it; a launcher that goes away first leaves no
 * process behind. Real child processes running the built kit's `runService`.
 */
const dist = resolve(__dirname, '../../dist');
const script = `
  const { runService } = require(${JSON.stringify(dist)} + '/process/run.js');
  const { loadConfig, env, z } = require(${JSON.stringify(dist)} + '/config/config.js');
  runService('probe', () => loadConfig({ LOG_LEVEL: env.str('silent'), SHUTDOWN_TIMEOUT_MS: env.int(1000), DATABASE_URL: z.string() }), async (config) => {
    process.send({ started: config.DATABASE_URL, waiting: process.env.HALO_LATE_ENV ?? null });
    process.disconnect();
  });
`;

function start(env: Record<string, string>): { child: ChildProcess; stderr: () => string } {
  let stderr = '';
  const child = spawn(process.execPath, ['-e', script], {
    env: { PATH: process.env.PATH!, ...env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return { child, stderr: () => stderr };
}

const nextMessage = (child: ChildProcess) => once(child, 'message').then(([m]) => m as Record<string, unknown>);

it('waits for the launcher to send DATABASE_URL, then starts with it', async () => {
  const { child } = start({ HALO_LATE_ENV: 'ipc' });
  // Not started before the message: a config without DATABASE_URL would have exited 78 at once.
  await new Promise((r) => setTimeout(r, 300));
  expect(child.exitCode).toBeNull();
  const message = nextMessage(child);
  child.send({ halo: 'env', env: { DATABASE_URL: 'postgres://late@127.0.0.1/x' } });
  expect(await message).toEqual({ started: 'postgres://late@127.0.0.1/x', waiting: null });
  await once(child, 'exit');
});

it('ignores other messages while it waits', async () => {
  const { child } = start({ HALO_LATE_ENV: 'ipc' });
  child.send({ hello: 'world' });
  child.send({ halo: 'env' });
  const message = nextMessage(child);
  child.send({ halo: 'env', env: { DATABASE_URL: 'postgres://second@127.0.0.1/x' } });
  expect(await message).toEqual({ started: 'postgres://second@127.0.0.1/x', waiting: null });
  await once(child, 'exit');
});

it('exits when the launcher goes away before sending', async () => {
  const { child } = start({ HALO_LATE_ENV: 'ipc' });
  await new Promise((r) => setTimeout(r, 200));
  child.disconnect();
  const [code] = (await once(child, 'exit')) as [number];
  expect(code).toBe(1);
});

it('without HALO_LATE_ENV the environment is complete: a missing variable is refused at once', async () => {
  const { child, stderr } = start({});
  const [code] = (await once(child, 'exit')) as [number];
  expect(code).toBe(78);
  expect(stderr()).toMatch(/^probe: .*DATABASE_URL/m);
});
