import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * podman, as `npm run images` and the container tests call it. Debian's podman runs as root here;
 * its default OCI runtime (crun) may be refused `setrlimit` in a sandboxed machine, so unless the
 * caller has its own CONTAINERS_CONF, podman gets one that selects runc (when installed) and gives
 * every container explicit file and process limits.
 */
export const ROOT = resolve(__dirname, '../../..');

/** The one command that installs what the images and their tests need (Debian/Ubuntu). */
export const INSTALL_HINT = 'apt-get install podman runc debootstrap';

/** What is missing to run podman here, or undefined. */
export function podmanMissing(): string | undefined {
  const version = spawnSync('podman', ['--version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) return `podman is not installed (${INSTALL_HINT})`;
  return undefined;
}

let env: NodeJS.ProcessEnv | undefined;

/** The environment every podman call gets (see above). */
export function podmanEnv(): NodeJS.ProcessEnv {
  if (env) return env;
  if (process.env.CONTAINERS_CONF) return (env = process.env);
  const dir = join(ROOT, '.data/containers');
  mkdirSync(dir, { recursive: true });
  const runc = spawnSync('runc', ['--version'], { stdio: 'ignore' }).status === 0;
  const conf = join(dir, 'containers.conf');
  writeFileSync(
    conf,
    [
      '# Written by tools/src/containers/podman.ts; set CONTAINERS_CONF to use your own.',
      ...(runc ? ['[engine]', 'runtime = "runc"'] : []),
      '[containers]',
      'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]',
      '',
    ].join('\n'),
  );
  return (env = { ...process.env, CONTAINERS_CONF: conf });
}

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs podman; rejects with its stderr unless `allowFailure`. `input` is written to its stdin.
 * `timeoutMs` kills it (SIGTERM) when it runs longer: a pull from an unreachable registry may hang.
 */
export function podman(
  args: string[],
  opts: { allowFailure?: boolean; input?: string | Buffer; quiet?: boolean; timeoutMs?: number } = {},
): Promise<Result> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('podman', args, { env: podmanEnv(), stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const result = { code: code ?? 1, stdout, stderr };
      if (result.code !== 0 && !opts.allowFailure) {
        reject(
          new Error(`podman ${args.slice(0, 3).join(' ')} … failed (${result.code}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`),
        );
      } else resolvePromise(result);
    });
    child.stdin.end(opts.input);
  });
}

/** Runs podman with its output passed through (long builds), resolving to its exit code. */
export function podmanLoud(args: string[], opts: { cwd?: string; onLine?: (line: string) => void } = {}): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('podman', args, { env: podmanEnv(), cwd: opts.cwd ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const relay = (stream: NodeJS.ReadableStream, to: NodeJS.WriteStream) => {
      let rest = '';
      stream.on('data', (c: Buffer) => {
        rest += c.toString();
        const lines = rest.split('\n');
        rest = lines.pop()!;
        for (const line of lines) (opts.onLine ?? ((l: string) => to.write(`${l}\n`)))(line);
      });
    };
    relay(child.stdout, process.stdout);
    relay(child.stderr, process.stderr);
    child.on('error', reject);
    child.on('close', (code) => resolvePromise(code ?? 1));
  });
}

/** Whether an image is in podman's local store. */
export async function imageExists(image: string): Promise<boolean> {
  return (await podman(['image', 'exists', image], { allowFailure: true })).code === 0;
}

/**
 * Runs a command with its stdout and stderr appended to `logFile` (after a `$ command` line),
 * resolving to its exit code: long builds keep the terminal quiet and leave the whole output.
 */
export function runToLog(
  command: string,
  args: string[],
  logFile: string,
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<number> {
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  writeSync(fd, `$ ${[command, ...args].join(' ')}\n`);
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, stdio: ['ignore', fd, fd] });
    let settled = false;
    // A command that cannot start emits 'error' and may still emit 'close'.
    const done = (code: number, note?: string) => {
      if (settled) return;
      settled = true;
      if (note) writeSync(fd, `${note}\n`);
      closeSync(fd);
      resolvePromise(code);
    };
    child.on('error', (err) => done(127, `${command}: ${err.message}`));
    child.on('close', (code, signal) => done(code ?? 1, signal ? `${command}: killed by ${signal}` : undefined));
  });
}

/** podman through runToLog, with podman's environment. */
export function podmanToLog(args: string[], logFile: string, opts: { cwd?: string } = {}): Promise<number> {
  return runToLog('podman', args, logFile, { cwd: opts.cwd, env: podmanEnv() });
}

/** The last `lines` lines of a log file ('' when it cannot be read). */
export function tailOf(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** A container's address on `network`, podman's restart count, when it last started, whether it runs. */
export async function inspectContainer(
  container: string,
  network: string,
): Promise<{ ip?: string; restarts: number; startedAt: string; running: boolean }> {
  const format = '{{json .NetworkSettings.Networks}}|{{.RestartCount}}|{{.State.StartedAt}}|{{.State.Running}}';
  const out = await podman(['inspect', '--format', format, container], { allowFailure: true });
  const [networks, restarts, startedAt, running] = out.stdout.trim().split('|');
  let ip: string | undefined;
  try {
    ip = (JSON.parse(networks ?? '{}') as Record<string, { IPAddress?: string }>)[network]?.IPAddress || undefined;
  } catch {
    ip = undefined;
  }
  return { ip, restarts: Number(restarts ?? 0), startedAt: startedAt ?? '', running: running === 'true' };
}

/** Calls `onDied` with the name of each container carrying `label` that dies, until the process is killed. */
export function watchDied(label: string, onDied: (name: string) => void): ChildProcess {
  const events = spawn('podman', ['events', '--filter', `label=${label}`, '--filter', 'event=died', '--format', '{{.Name}}'], {
    env: podmanEnv(),
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let rest = '';
  events.stdout.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop()!;
    for (const name of lines) if (name.trim()) onDied(name.trim());
  });
  return events;
}
