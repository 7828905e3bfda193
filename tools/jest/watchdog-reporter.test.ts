import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The watchdog reporter, run by a real Jest on two files of its own: one whose worker blocks its
 * event loop (no test timeout can fire in it, and Jest alone would wait for it), one that passes.
 */
const JEST = require.resolve('jest/bin/jest');
const REPORTER = resolve(__dirname, 'watchdog-reporter.js');

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'halo-watchdog-'));
  writeFileSync(join(dir, 'quick.check.js'), "it('passes', () => expect(1).toBe(1));\n");
  writeFileSync(
    join(dir, 'stuck.check.js'),
    // Blocks the worker's thread for a minute: its timers, Jest's included, cannot run.
    "it('never yields', () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000); }, 5000);\n",
  );
  writeFileSync(
    join(dir, 'jest.config.js'),
    `module.exports = ${JSON.stringify({
      rootDir: dir,
      testMatch: ['**/*.check.js'],
      transform: {},
      maxWorkers: 2,
      cacheDirectory: join(dir, 'cache'),
      reporters: ['default', REPORTER],
    })};\n`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('names a file that stops making progress, shows the process tree, and ends the run with 1', async () => {
  const child = spawn(process.execPath, [JEST, '--config', join(dir, 'jest.config.js')], {
    cwd: dir,
    env: { ...process.env, HALO_TEST_FILE_WARN_S: '2', HALO_TEST_FILE_LIMIT_S: '6', CI: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((done) => child.once('exit', done));

  expect(code).toBe(1);
  expect(output).toMatch(/PASS .*quick\.check\.js/);
  expect(output).toMatch(/jest watchdog: .*stuck\.check\.js still runs after \d+ s/);
  expect(output).toMatch(/jest watchdog: .*stuck\.check\.js has run for \d+ s \(HALO_TEST_FILE_LIMIT_S=6\); ending the run/);
  // The tree lists the workers under the Jest process, with their state.
  expect(output).toMatch(/^ {2}\d+ \d+ \S+ \d+s .*jest/m);
  expect(output).not.toMatch(/quick\.check\.js (still runs|has run)/);
  // Its stuck worker was killed with the run, not left blocked behind it.
  const workers = [...output.matchAll(/^ {2}(\d+) \d+ \S+ \d+s .*jest-worker/gm)].map((m) => Number(m[1]));
  expect(workers.length).toBeGreaterThan(0);
  await new Promise((r) => setTimeout(r, 500));
  expect(workers.filter(alive)).toEqual([]);
}, 60_000);

/** Running (a killed process whose parent is gone may linger as a zombie until it is reaped). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
