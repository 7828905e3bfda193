import type { Pool, PoolClient } from 'pg';
import { load } from '../process/lazy';
import type { Logger } from '../logging/logger';

/** What every query site sees: the pool itself, one session, or one transaction. */
export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<{ rows: R[]; rowCount: number }>;
  /** Runs a script of several statements without parameters (migrations, seeds). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly schema: string;
  /** Counts statements sent; tests use it to prove batching (e.g. N+1 never happens). */
  readonly stats: { queries: number };
  /** BEGIN … COMMIT on one connection, ROLLBACK if `fn` throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Holds one connection for `fn` (session-level locks, e.g. the migration lock). */
  session<T>(fn: (conn: Queryable) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  /** The pool's connections right now (metrics): open, idle, and callers waiting for one. */
  poolStats(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

export interface OpenDbOptions {
  /** A Postgres URL: the operator's in production, the embedded server's under `npm start`. */
  url: string;
  /** The service's own schema: the search_path of every connection, created if missing. */
  schema: string;
  poolSize?: number;
  logger?: Logger;
  /**
   * Shown in pg_stat_activity as `application_name` (default `halo:<schema>`), so an operator
   * sees which service holds which connections. A URL's own `application_name` wins.
   */
  applicationName?: string;
}

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const INT8 = 20;
const NUMERIC = 1700;

/** int8 counts and ids come back as numbers (ids stay far below 2^53), numeric money as numbers. */
const toNumber = (v: string) => Number(v);
const getTypeParser = ((oid: number, format?: 'text' | 'binary') =>
  oid === INT8 || oid === NUMERIC
    ? toNumber
    : (load.pg().types.getTypeParser(oid, format) as (value: string) => unknown)) as typeof import('pg').types.getTypeParser;

export async function openDb(opts: OpenDbOptions): Promise<Db> {
  const schema = opts.schema;
  if (!SCHEMA_NAME.test(schema)) throw new Error(`Invalid schema name: ${schema}`);
  const { Pool: PgPool } = load.pg();
  const pool = new PgPool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    // Every connection starts with the service's schema as its search_path.
    options: `-c search_path=${schema}`,
    ...(/[?&]application_name=/.test(opts.url) ? {} : { application_name: (opts.applicationName ?? `halo:${schema}`).slice(0, 63) }),
    types: { getTypeParser },
  });
  pool.on('error', (err) => opts.logger?.error({ err }, 'idle database client failed'));
  const stats = { queries: 0 };
  const wrap = (client: Pool | PoolClient): Queryable => ({
    async query<R>(text: string, params?: readonly unknown[]) {
      stats.queries++;
      const res = await client.query(text, params as unknown[] | undefined);
      return { rows: res.rows as R[], rowCount: res.rowCount ?? 0 };
    },
    async exec(sql: string) {
      stats.queries++;
      await client.query(sql);
    },
  });
  try {
    await ensureSchema(pool, schema);
  } catch (err) {
    await pool.end();
    throw err;
  }
  const session = async <T>(fn: (conn: Queryable) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      return await fn(wrap(client));
    } finally {
      client.release();
    }
  };
  opts.logger?.info({ schema }, 'database ready');
  return {
    schema,
    stats,
    ...wrap(pool),
    session,
    transaction: (fn) =>
      session(async (conn) => {
        await conn.exec('BEGIN');
        try {
          const out = await fn(conn);
          await conn.exec('COMMIT');
          return out;
        } catch (err) {
          await conn.exec('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }),
    async ping() {
      await pool.query('SELECT 1');
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => pool.end(),
  };
}

/**
 * A service's role normally owns its schema already (docs/database.md), and such a role may not
 * create schemas: Postgres checks CREATE on the database before it looks at IF NOT EXISTS. So
 * the schema is created only when it is really missing (tests, a superuser URL in development).
 */
async function ensureSchema(pool: Pool, schema: string): Promise<void> {
  const { rowCount } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (!rowCount) await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
}
