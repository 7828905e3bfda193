// @ts-check
const { execFileSync } = require('node:child_process');

/**
 * A Jest reporter that bounds how long one test file may run. Jest's `testTimeout` bounds a test
 * or a hook, but a worker whose event loop never turns again (blocked, or stopped by a signal)
 * never reports back, and Jest then waits for it forever: a CI run that hangs until its job limit
 * says nothing about why. This reporter names the file instead:
 *
 * - after `HALO_TEST_FILE_WARN_S` (default 300 s) it prints the file and the test run's process tree
 *   (each process's state: `T` is a stopped one, `D` one waiting on the disk);
 * - after `HALO_TEST_FILE_LIMIT_S` (default 900 s) it prints them again, kills every process of the
 *   run (a stopped worker would otherwise outlive it) and ends the run with exit code 1.
 *
 * The slowest file takes a few minutes on a loaded 2-core machine (docs/testing.md); the limits are
 * far above that, so only a file that no longer makes progress meets them.
 */
class WatchdogReporter {
  constructor() {
    /** @type {Map<string, { started: number, warned: boolean }>} */
    this.running = new Map();
    this.warnMs = seconds('HALO_TEST_FILE_WARN_S', 300) * 1000;
    this.limitMs = seconds('HALO_TEST_FILE_LIMIT_S', 900) * 1000;
    this.timer = undefined;
  }

  onRunStart() {
    this.timer = setInterval(() => this.check(), Math.min(10_000, this.warnMs / 2));
    this.timer.unref();
  }

  /** @param {{ path: string }} test */
  onTestFileStart(test) {
    this.running.set(test.path, { started: Date.now(), warned: false });
  }

  /** @param {{ path: string }} test */
  onTestFileResult(test) {
    this.running.delete(test.path);
  }

  onRunComplete() {
    clearInterval(this.timer);
  }

  check() {
    const now = Date.now();
    for (const [path, file] of this.running) {
      const ranS = Math.round((now - file.started) / 1000);
      if (now - file.started >= this.limitMs) {
        const tree = descendants();
        process.stderr.write(
          `\njest watchdog: ${path} has run for ${ranS} s (HALO_TEST_FILE_LIMIT_S=${this.limitMs / 1000}); ending the run\n${show(tree)}\n`,
        );
        for (const row of tree) {
          try {
            process.kill(row.pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
        process.exit(1);
      }
      if (!file.warned && now - file.started >= this.warnMs) {
        file.warned = true;
        process.stderr.write(`\njest watchdog: ${path} still runs after ${ranS} s\n${show(descendants())}\n`);
      }
    }
  }
}

/** @param {string} name @param {number} fallback */
function seconds(name, fallback) {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/**
 * This process's descendants: pid, parent, state, seconds alive, command (cut to 160 characters).
 * @returns {{ pid: number, ppid: number, stat: string, etimes: string, args: string }[]}
 */
function descendants() {
  let table;
  try {
    table = execFileSync('ps', ['-eo', 'pid=,ppid=,stat=,etimes=,args='], { encoding: 'utf8' });
  } catch {
    return [];
  }
  const rows = table
    .trim()
    .split('\n')
    .map((line) => {
      const [pid, ppid, stat, etimes, ...args] = line.trim().split(/\s+/);
      return { pid: Number(pid), ppid: Number(ppid), stat: stat ?? '', etimes: etimes ?? '', args: args.join(' ').slice(0, 160) };
    });
  const ours = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const row of rows) {
      if (!ours.has(row.pid) && ours.has(row.ppid)) {
        ours.add(row.pid);
        grew = true;
      }
    }
  }
  return rows.filter((row) => row.pid !== process.pid && ours.has(row.pid));
}

/** @param {ReturnType<typeof descendants>} tree */
function show(tree) {
  if (tree.length === 0) return '  (no process below this one, or ps is not available)';
  return ['  pid ppid state alive command', ...tree.map((row) => `  ${row.pid} ${row.ppid} ${row.stat} ${row.etimes}s ${row.args}`)].join(
    '\n',
  );
}

module.exports = WatchdogReporter;
