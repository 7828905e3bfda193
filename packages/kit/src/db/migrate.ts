import { readFile } from 'node:fs/promises';
import type { UmzugStorage } from 'umzug';
import { load } from '../process/lazy';
import type { Db, Queryable } from './db';
import type { Logger } from '../logging/logger';

/**
 * Forward-only, versioned SQL migrations (`NNNN_name.sql`), applied in name order at start-up.
 * Umzug does the bookkeeping; each file runs in its own transaction, and a Postgres advisory lock
 * keyed on the schema makes concurrent replicas wait for each other instead of racing.
 */
export async function migrate(db: Db, dir: string, logger?: Logger): Promise<string[]> {
  return db.session(async (conn) => {
    await conn.query('SELECT pg_advisory_lock(hashtext($1))', [db.schema]);
    try {
      await conn.exec(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           name text PRIMARY KEY,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const { Umzug } = load.umzug();
      const umzug = new Umzug({
        migrations: {
          glob: ['*.sql', { cwd: dir }],
          resolve: ({ name, path }) => ({
            name,
            up: async () => runFile(conn, name, path!),
          }),
        },
        storage: sqlStorage(conn),
        logger: undefined,
      });
      const applied = await umzug.up();
      for (const m of applied) logger?.info({ migration: m.name, schema: db.schema }, 'migration applied');
      return applied.map((m) => m.name);
    } finally {
      await conn.query('SELECT pg_advisory_unlock(hashtext($1))', [db.schema]);
    }
  });
}

async function runFile(conn: Queryable, name: string, path: string): Promise<void> {
  const sql = await readFile(path, 'utf8');
  await conn.exec('BEGIN');
  try {
    await conn.exec(sql);
    await conn.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
    await conn.exec('COMMIT');
  } catch (err) {
    await conn.exec('ROLLBACK').catch(() => undefined);
    throw new Error(`Migration ${name} failed: ${(err as Error).message}`, { cause: err });
  }
}

/** The applied set lives in the service's own schema; `logMigration` is done inside runFile's transaction. */
function sqlStorage(conn: Queryable): UmzugStorage {
  return {
    async executed() {
      const { rows } = await conn.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
      return rows.map((r) => r.name);
    },
    async logMigration() {},
    async unlogMigration({ name }) {
      await conn.query('DELETE FROM schema_migrations WHERE name = $1', [name]);
    },
  };
}
