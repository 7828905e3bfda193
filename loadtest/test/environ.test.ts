import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { environOf } from '../src/gateways-bench';

/**
 * The benches start a second copy of a process (bench:ab's baseline gateway, the cluster's second
 * gateway) with the first one's environment. The launcher's children have an IPC channel, and
 * Node's variables for it, copied, would give the copy a channel on an fd it does not own.
 */
it('copies a process environment without its IPC channel', async () => {
  const child = spawn(process.execPath, ['-e', 'process.send("up"); setInterval(() => {}, 1000)'], {
    env: { ...process.env, HALO_MARK: 'copied' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  try {
    await once(child, 'message');
    // The original has them: without the filter they would be copied.
    expect(readFileSync(`/proc/${child.pid}/environ`, 'utf8')).toContain('NODE_CHANNEL_FD=');
    const env = environOf(child.pid!);
    expect(env.HALO_MARK).toBe('copied');
    expect(Object.keys(env).filter((k) => k.startsWith('NODE_CHANNEL'))).toEqual([]);
    // And the copy, started with that environment, runs without a channel.
    const copy = spawn(process.execPath, ['-e', 'console.log(Boolean(process.channel))'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    copy.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await once(copy, 'exit');
    expect(out.trim()).toBe('false');
  } finally {
    child.kill();
  }
});
