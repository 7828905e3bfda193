import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { isoTime, LineBuffer } from './logger';
import { capturingLogger } from './testing';

/**
 * The logger on a closed output (its reader gone, as when the launcher is killed): the lines are
 * dropped and the process still exits. A real process writing to a pipe whose read end is closed;
 * it runs the built kit (`npm run build`), as the services do.
 */
const LOGGER = resolve(__dirname, '../dist/logger.js');

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

describe('the time field', () => {
  afterEach(() => jest.useRealTimers());

  it('is the instant in ISO 8601, as toISOString writes it, at every millisecond and across seconds', () => {
    jest.useFakeTimers();
    const instants = [
      Date.UTC(2026, 10, 26, 23, 59, 59, 999),
      Date.UTC(2026, 10, 27, 0, 0, 0, 0),
      Date.UTC(2026, 10, 27, 0, 0, 0, 7),
      Date.UTC(2026, 10, 27, 0, 0, 0, 42),
      Date.UTC(2026, 10, 27, 0, 0, 0, 42),
      Date.UTC(2026, 10, 27, 0, 0, 0, 300),
      Date.UTC(2026, 10, 27, 0, 0, 1, 5),
      Date.UTC(2027, 0, 1, 0, 0, 0, 0),
    ];
    for (const at of instants) {
      jest.setSystemTime(at);
      expect(isoTime()).toBe(`,"time":"${new Date(at).toISOString()}"`);
    }
  });
});

describe('the line buffer', () => {
  it('writes every line once and in order, multi-byte text included, in a flush and at exit', async () => {
    const { mkdtempSync, openSync, readFileSync, closeSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const path = join(mkdtempSync(join(tmpdir(), 'halo-lines-')), 'out.log');
    const fd = openSync(path, 'w');
    // No batch is written by size here: the flush below is the only one in flight.
    const buffer = new LineBuffer(fd, 1 << 20);
    const lines = Array.from({ length: 50 }, (_, i) => `{"i":${i},"text":"${i % 3 === 0 ? 'żółć ✓' : 'plain'}"}\n`);
    for (const line of lines.slice(0, 25)) buffer.write(line);
    await new Promise<void>((done) => buffer.flush(done));
    for (const line of lines.slice(25)) buffer.write(line);
    buffer.flushSync();
    closeSync(fd);
    expect(readFileSync(path, 'utf8')).toBe(lines.join(''));
  });
});
