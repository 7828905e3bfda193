import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';

/**
 * A service process (the built kit's `runService`) whose code leaves a promise rejection
 * unhandled: it logs it with its reason, counts it in `halo_unhandled_rejections_total`, and keeps
 * running — where Node's default would have ended it.
 */
const dist = resolve(__dirname, '../../dist');
const script = `
  const { runService } = require(${JSON.stringify(dist)} + '/process/run.js');
  const { loadConfig, env } = require(${JSON.stringify(dist)} + '/config/config.js');
  const { createProcessRegistry } = require(${JSON.stringify(dist)} + '/metrics/metrics.js');
  runService('probe', () => loadConfig({ LOG_LEVEL: env.str('error'), SHUTDOWN_TIMEOUT_MS: env.int(1000) }), async () => {
    const registry = createProcessRegistry('probe');
    Promise.reject(new Error('nobody handles me'));
    setTimeout(async () => {
      process.send({ alive: true, metrics: await registry.metrics() });
      process.disconnect();
    }, 200);
  });
`;

it('logs and counts an unhandled rejection, and the process goes on', async () => {
  let stdout = '';
  const child = spawn(process.execPath, ['-e', script], { env: { PATH: process.env.PATH! }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  const [message] = (await once(child, 'message')) as [{ alive: boolean; metrics: string }];
  await once(child, 'exit');
  expect(message.alive).toBe(true);
  expect(message.metrics).toMatch(/^halo_unhandled_rejections_total\{service="probe"\} 1$/m);
  const logged = stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { level: number | string; msg: string; err?: { message?: string } });
  expect(logged).toEqual([
    expect.objectContaining({
      msg: expect.stringContaining('unhandled promise rejection'),
      err: expect.objectContaining({ message: 'nobody handles me' }),
    }),
  ]);
});
