import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from '../launch/ports';

// Kept apart from testing.ts (which loads the whole kit) so Jest's global setup can load it alone.
/** A private redis-server (the machine's binary) for one test file or one test run. */
export interface RedisServer {
  port: number;
  url: string;
  child: ChildProcess;
  /** SIGKILL (what an outage looks like to a client); resolves once it is gone. */
  stop(): Promise<void>;
}

/** The one line a contributor sees when a test needs Redis and the machine has none. */
export const REDIS_MISSING =
  'No Redis answers and redis-server is not installed: install it (apt-get install redis-server, brew install redis) or set TEST_REDIS_URL';

/** Whether `redis-server` can be run here (on `path`, default this process's PATH). */
export function hasRedisServer(path = process.env.PATH): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore', env: { ...process.env, PATH: path } }).status === 0;
}

/**
 * Starts the machine's `redis-server` on `port` (default: a free one), loopback only, nothing
 * persisted; resolves once it accepts connections. Call it again with the same port to bring a
 * stopped one back.
 */
export async function startRedisServer(port?: number): Promise<RedisServer> {
  const p = port ?? (await freePort());
  const child = spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.once('error', (err: NodeJS.ErrnoException) => reject(new Error(err.code === 'ENOENT' ? REDIS_MISSING : err.message)));
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
  });
  child.stdout.resume();
  child.stderr.resume();
  return {
    port: p,
    url: `redis://127.0.0.1:${p}`,
    child,
    stop: () =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
  };
}
