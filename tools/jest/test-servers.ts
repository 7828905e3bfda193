import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { hasRedisServer, REDIS_MISSING, startRedisServer, type RedisServer } from '../../packages/kit/src/testing/test-redis';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/embedded-postgres';

/**
 * What `npm test` needs besides Node, found or started once per run (Jest's global setup):
 *
 * - PostgreSQL: `TEST_DATABASE_URL` if set, else the server on 127.0.0.1:5432 (database `test`);
 *   when nothing answers there, an embedded PostgreSQL (the one `npm start` uses) in a temporary
 *   directory, removed afterwards.
 * - Redis: `TEST_REDIS_URL` if set, else 127.0.0.1:6379; when nothing answers there, the machine's
 *   `redis-server` on a free port, or one line saying what to install.
 *
 * The URLs are put in the environment, which the test workers inherit.
 * `HALO_TEST_POSTGRES=embedded` and `HALO_TEST_REDIS=spawn` take the second path even when the
 * first would do (to check it on a machine that has both).
 */
export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const DEFAULT_REDIS = { host: '127.0.0.1', port: 6379 };

export class TestServersError extends Error {}

export interface TestServers {
  postgres?: EmbeddedPostgres & { dir: string };
  redis?: RedisServer;
  stop(): Promise<void>;
}

type Env = Record<string, string | undefined>;

export async function startTestServers(env: Env, log: (line: string) => void = () => undefined): Promise<TestServers> {
  const servers: TestServers = {
    async stop() {
      await servers.redis?.stop();
      await servers.postgres?.stop();
      if (servers.postgres) rmSync(servers.postgres.dir, { recursive: true, force: true });
    },
  };
  try {
    const forceEmbedded = env.HALO_TEST_POSTGRES === 'embedded';
    if (forceEmbedded || (!env.TEST_DATABASE_URL && !(await postgresAnswers(DEFAULT_TEST_DATABASE_URL)))) {
      const dir = mkdtempSync(join(tmpdir(), 'halo-test-pg-'));
      // Run as root, PostgreSQL runs as user postgres, which must reach its data directory.
      chmodSync(dir, 0o755);
      const server = await startEmbeddedPostgres({ dataDir: join(dir, 'postgres') });
      servers.postgres = Object.assign(server, { dir });
      const client = new pg.Client({ connectionString: server.adminUrl });
      await client.connect();
      await client.query('CREATE DATABASE test').finally(() => client.end());
      const url = new URL(server.adminUrl);
      url.pathname = '/test';
      env.TEST_DATABASE_URL = url.href;
      log(
        `tests use an embedded PostgreSQL on 127.0.0.1:${server.port}${forceEmbedded ? ' (HALO_TEST_POSTGRES=embedded)' : ' (nothing answers on 127.0.0.1:5432)'}`,
      );
    }
    const forceSpawn = env.HALO_TEST_REDIS === 'spawn';
    if (forceSpawn || (!env.TEST_REDIS_URL && !(await redisAnswers(DEFAULT_REDIS.host, DEFAULT_REDIS.port)))) {
      if (!hasRedisServer(env.PATH ?? process.env.PATH)) throw new TestServersError(REDIS_MISSING);
      servers.redis = await startRedisServer();
      env.TEST_REDIS_URL = servers.redis.url;
      log(
        `tests use redis-server on 127.0.0.1:${servers.redis.port}${forceSpawn ? ' (HALO_TEST_REDIS=spawn)' : ' (nothing answers on 127.0.0.1:6379)'}`,
      );
    }
    return servers;
  } catch (err) {
    await servers.stop();
    throw err;
  }
}

/** Whether a PostgreSQL server answers at the URL's address (a refused login still answers). */
async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return true;
  } catch (err) {
    return typeof (err as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((err as { code: string }).code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether something on host:port answers Redis' PING. */
function redisAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk: Buffer) => done(chunk.toString().startsWith('+PONG')));
  });
}
