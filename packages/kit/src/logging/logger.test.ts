import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { capturingLogger } from '../testing';

/**
 * The logger on a closed output (its reader gone, as when the launcher is killed): the lines are
 * dropped and the process still exits. A real process writing to a pipe whose read end is closed;
 * it runs the built kit (`npm run build`), as the services do.
 */
const LOGGER = resolve(__dirname, '../../dist/logging/logger.js');

function run(script: string): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, ['-e', `const { createLogger } = require(${JSON.stringify(LOGGER)});\n${script}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The reader goes away at once: every write of the child's ends in EPIPE.
  child.stdout.destroy();
  return new Promise((done) => child.once('exit', (code) => done({ code, ms: Date.now() - started })));
}

it('drops the lines and exits when its output is closed (a buffered flush at exit)', async () => {
  const { code } = await run(`
    const log = createLogger('t');
    setTimeout(() => {
      for (let i = 0; i < 2000; i++) log.info({ i }, 'a line nobody reads');
      process.exit(0);
    }, 300);
  `);
  expect(code).toBe(0);
}, 15_000);

it('keeps running, and exits on SIGTERM, after a batch failed to reach a closed output', async () => {
  const { code } = await run(`
    const log = createLogger('t');
    for (let i = 0; i < 2000; i++) log.info({ i }, 'a line nobody reads');
    process.on('SIGTERM', () => { log.info('shutting down'); process.exit(3); });
    setTimeout(() => process.kill(process.pid, 'SIGTERM'), 500);
    setInterval(() => log.info('still here'), 50);
  `);
  expect(code).toBe(3);
}, 15_000);

describe('errors in log lines', () => {
  it('keep type, message, code and a bounded stack, never the properties a library attached', () => {
    const { logger, lines } = capturingLogger();
    // What node-postgres does to an idle client's error: the client, with its settings and cancel key.
    const err = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
      client: { connectionParameters: { password: 'hunter2' }, processID: 4242, secretKey: 987654321 },
    });
    logger.error({ err: Object.assign(new Error('query failed', { cause: err })) }, 'request failed');
    const logged = lines[0]!.err as Record<string, unknown>;
    expect(Object.keys(logged).sort()).toEqual(['cause', 'message', 'stack', 'type']);
    expect(logged.cause).toEqual({
      type: 'Error',
      message: 'terminating connection due to administrator command',
      code: '57P01',
      stack: expect.any(String),
    });
    expect(JSON.stringify(lines[0])).not.toMatch(/hunter2|secretKey|987654321|processID/);
    expect((logged.stack as string).split('\n').length).toBeLessThanOrEqual(13);
  });
});
