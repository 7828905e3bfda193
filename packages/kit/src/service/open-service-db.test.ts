import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../logging/logger';
import { Lifecycle } from '../process/lifecycle';
import { dropSchema, TEST_DATABASE_URL, throwawaySchema } from '../testing';
import { openServiceDb, type ServiceRuntimeConfig } from './service';

/**
 * `DATABASE_MIGRATION_URL`: beside a transaction pooler, a service migrates over a direct
 * connection (the migration's advisory lock is session-level) and serves over `DATABASE_URL`.
 * The migration records the `application_name` of the connection that ran it.
 */
const logger = createLogger('kit-test', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'halo-kit-osdb-'));
writeFileSync(join(dir, '0001_who.sql'), `CREATE TABLE who AS SELECT current_setting('application_name') AS app;`);
const schemas: string[] = [];

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  for (const s of schemas) await dropSchema(s);
});

const config = (extra: Partial<ServiceRuntimeConfig>): ServiceRuntimeConfig => {
  const schema = throwawaySchema('kitosdb');
  schemas.push(schema);
  return {
    DATABASE_URL: TEST_DATABASE_URL,
    DB_SCHEMA: schema,
    DB_POOL_SIZE: 2,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: 0,
    GRPC_PORT: 0,
    SHUTDOWN_TIMEOUT_MS: 1000,
    ...extra,
  };
};

async function opened(c: ServiceRuntimeConfig) {
  const lifecycle = new Lifecycle(logger);
  try {
    const db = await openServiceDb('osdb', c, { logger, lifecycle, migrationsDir: dir });
    return (await db.query<{ app: string }>('SELECT app FROM who')).rows[0]?.app;
  } finally {
    await lifecycle.shutdown(1000);
  }
}

describe('openServiceDb and DATABASE_MIGRATION_URL', () => {
  it('migrates over DATABASE_URL when no migration URL is set', async () => {
    const c = config({});
    expect(await opened(c)).toBe(`halo:osdb:${c.DB_SCHEMA}`);
  });

  it('migrates over DATABASE_MIGRATION_URL when it is set, and serves over DATABASE_URL', async () => {
    const c = config({ DATABASE_MIGRATION_URL: TEST_DATABASE_URL });
    expect(await opened(c)).toBe(`halo:osdb:${c.DB_SCHEMA}:migrate`);
  });

  it('refuses to start, naming the setting, when the migration URL cannot be reached', async () => {
    const c = config({ DATABASE_MIGRATION_URL: 'postgres://postgres@127.0.0.1:1/test' });
    await expect(opened(c)).rejects.toThrow(/^DATABASE_MIGRATION_URL: cannot connect: /);
  });
});
