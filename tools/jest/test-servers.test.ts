import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { REDIS_MISSING } from '@halo/kit/testing';
import { startTestServers } from './test-servers';

/**
 * `npm test` on a machine with nothing installed: the global setup's second paths, forced on this
 * machine (which has both servers) by the switches, with the real binaries.
 */
const ping = (url: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('error', reject);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (c: Buffer) => {
      socket.destroy();
      resolve(c.toString().trim());
    });
  });

it('starts an embedded PostgreSQL (database test) and a redis-server on a free port, and stops both', async () => {
  const env: Record<string, string | undefined> = { HALO_TEST_POSTGRES: 'embedded', HALO_TEST_REDIS: 'spawn' };
  const lines: string[] = [];
  const servers = await startTestServers(env, (l) => lines.push(l));
  try {
    const client = new pg.Client({ connectionString: env.TEST_DATABASE_URL });
    await client.connect();
    try {
      expect(
        (await client.query<{ db: string; su: boolean }>("SELECT current_database() AS db, current_setting('is_superuser') = 'on' AS su"))
          .rows,
      ).toEqual([{ db: 'test', su: true }]);
    } finally {
      await client.end();
    }
    expect(new URL(env.TEST_DATABASE_URL!).port).not.toBe('5432');
    expect(await ping(env.TEST_REDIS_URL!)).toBe('+PONG');
    expect(lines).toEqual([
      expect.stringMatching(/^tests use an embedded PostgreSQL on 127\.0\.0\.1:\d+/),
      expect.stringMatching(/^tests use redis-server on 127\.0\.0\.1:\d+/),
    ]);
  } finally {
    await servers.stop();
  }
  await expect(ping(env.TEST_REDIS_URL!)).rejects.toThrow(/ECONNREFUSED/);
  const after = new pg.Client({ connectionString: env.TEST_DATABASE_URL, connectionTimeoutMillis: 2_000 });
  await expect(after.connect()).rejects.toThrow(/ECONNREFUSED/);
}, 60_000);

it('says in one line what to install when no Redis answers and redis-server is not on PATH', async () => {
  // A PATH with node only: what a laptop without Redis has.
  const bin = mkdtempSync(join(tmpdir(), 'halo-no-redis-'));
  symlinkSync(process.execPath, join(bin, 'node'));
  try {
    await expect(startTestServers({ PATH: bin, TEST_DATABASE_URL: 'postgres://unused', HALO_TEST_REDIS: 'spawn' })).rejects.toThrow(
      REDIS_MISSING,
    );
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
});
