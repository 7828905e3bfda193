import { spawnSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { Logger } from './logger';

/** What every query site sees, whichever engine is underneath. */
export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<{ rows: R[]; rowCount: number }>;
  /** Runs a script of several statements without parameters (migrations, seeds). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly engine: 'postgres' | 'pglite';
  readonly schema: string;
  /** Counts statements sent; tests use it to prove batching (e.g. N+1 never happens). */
  readonly stats: { queries: number };
  /** BEGIN … COMMIT on one connection, ROLLBACK if `fn` throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Holds one connection for `fn` (session-level locks, e.g. the migration lock). */
  session<T>(fn: (conn: Queryable) => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDbOptions {
  /** A Postgres URL. When absent, embedded PGlite is used with files under `dataDir`. */
  url?: string | undefined;
  /** PGlite data directory; `undefined` (with no url) keeps the database in memory. */
  dataDir?: string | undefined;
  /** The service's own schema: created if missing and set as the search_path. */
  schema: string;
  poolSize?: number;
  logger?: Logger;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const INT8 = 20;
const NUMERIC = 1700;

/** int8 counts and ids come back as numbers on both engines (ids stay far below 2^53). */
const toNumber = (v: string) => Number(v);

export async function openDb(opts: OpenDbOptions): Promise<Db> {
  if (!SCHEMA_NAME.test(opts.schema)) throw new Error(`Invalid schema name: ${opts.schema}`);
  const db = opts.url ? await openPostgres(opts.url, opts) : await openPglite(opts.dataDir, opts);
  opts.logger?.info({ engine: db.engine, schema: db.schema }, 'database ready');
  return db;
}

async function openPostgres(url: string, opts: OpenDbOptions): Promise<Db> {
  const schema = opts.schema;
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    // Every connection starts with the service's schema as its search_path.
    options: `-c search_path=${schema}`,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8 || oid === NUMERIC ? toNumber : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  pool.on('error', (err) => opts.logger?.error({ err }, 'idle database client failed'));
  const stats = { queries: 0 };
  const wrap = (client: pg.Pool | pg.PoolClient): Queryable => ({
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
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  const session = async <T>(fn: (conn: Queryable) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      return await fn(wrap(client));
    } finally {
      client.release();
    }
  };
  return {
    engine: 'postgres',
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
    close: () => pool.end(),
  };
}

async function openPglite(dataDir: string | undefined, opts: OpenDbOptions): Promise<Db> {
  const schema = opts.schema;
  if (dataDir) initPgliteDataDir(dataDir);
  // Options in the first argument: PGlite ignores the second when the first is not a string (the
  // in-memory case). INT8 as on pg: PGlite's own parser returns a BigInt above 2^53.
  const lite = new PGlite({ dataDir, parsers: { [INT8]: toNumber, [NUMERIC]: toNumber } });
  await lite.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"; SET search_path TO "${schema}";`);
  const stats = { queries: 0 };
  type LiteTx = Pick<PGlite, 'query' | 'exec'>;
  const wrap = (conn: LiteTx): Queryable => ({
    async query<R>(text: string, params?: readonly unknown[]) {
      stats.queries++;
      const res = await conn.query<R>(text, params as unknown[] | undefined);
      // PGlite reports affectedRows = 0 for a SELECT; pg's rowCount counts the rows returned.
      const returnsRows = res.fields.length > 0;
      return { rows: res.rows, rowCount: returnsRows ? res.rows.length : (res.affectedRows ?? 0) };
    },
    async exec(sql: string) {
      stats.queries++;
      await conn.exec(sql);
    },
  });
  // PGlite is one connection that serialises everything: a "session" is the database itself.
  return {
    engine: 'pglite',
    schema,
    stats,
    ...wrap(lite),
    session: (fn) => fn(wrap(lite)),
    transaction: (fn) => lite.transaction((tx) => fn(wrap(tx))),
    async ping() {
      await lite.query('SELECT 1');
    },
    close: () => lite.close(),
  };
}

/**
 * Creating a PGlite cluster (initdb) inflates a process to ~800 MB of RSS that it never gives
 * back, while opening an existing one costs ~280 MB. So a new data directory is initialised in a
 * short-lived child process, and the service only ever opens an existing cluster. When
 * `PGLITE_TEMPLATE_DIR` names an initialised cluster (the launcher makes one), it is copied
 * instead: a copy takes milliseconds, initdb seconds of CPU per service.
 */
export function initPgliteDataDir(dataDir: string, template = process.env.PGLITE_TEMPLATE_DIR): void {
  if (isPgliteCluster(dataDir)) return;
  if (template && isPgliteCluster(template)) {
    cpSync(template, dataDir, { recursive: true });
    return;
  }
  runPgliteInit([dataDir]);
}

/** `packages/kit/bin/pglite-init.js`: plain JS, so `npm start` can run it during the build. */
export const PGLITE_INIT_SCRIPT = resolve(__dirname, '../bin/pglite-init.js');

function runPgliteInit(args: string[]): void {
  const result = spawnSync(process.execPath, [PGLITE_INIT_SCRIPT, ...args], { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) {
    throw new Error(`Could not initialise the embedded database in ${args.at(-1)}: ${result.stderr || result.error?.message}`);
  }
}

export const isPgliteCluster = (dir: string) => existsSync(join(dir, 'PG_VERSION'));

/**
 * An empty, initialised PGlite cluster at `dir` for services to copy (see initPgliteDataDir). Built
 * beside it and renamed into place, so concurrent launchers never see half a template.
 */
export function ensurePgliteTemplate(dir: string): void {
  if (!isPgliteCluster(dir)) runPgliteInit(['--atomic', dir]);
}
