import { ConfigError } from '@halo/kit/config';
import { migrate } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { openTestDb } from '@halo/kit/testing';
import { DEMO_COUNT, seedDemoData } from '../src/db/seed';
import { SORT_SQL } from '../src/db/store';
import { catalogService } from '../src/service';
import { testConfig, type TestDb } from './helpers';

/** Config needs a database URL; these tests only read other settings. */
const DB = 'postgres://svc@db:5432/halo';

const logger = createLogger('catalog', 'silent');
const MIGRATIONS_DIR = catalogService.migrationsDir;
const loadCatalogConfig = catalogService.loadConfig;
let db: TestDb;

interface Snapshot {
  id: number;
  name: string;
  category: string;
  price: number;
  created_at: Date;
}
const snapshot = async () => (await db.query<Snapshot>('SELECT id, name, category, price, created_at FROM products ORDER BY id')).rows;

beforeAll(async () => {
  db = await openTestDb('catalog');
});

afterAll(async () => {
  await db?.drop();
});

describe('migrations', () => {
  it('apply once into the file’s own schema', async () => {
    expect(await migrate(db, MIGRATIONS_DIR, logger)).toEqual(['0001_init.sql']);
    const { rows } = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [db.schema],
    );
    expect(rows.map((r) => r.table_name)).toEqual(['demo_seeds', 'products', 'schema_migrations']);
    expect(await migrate(db, MIGRATIONS_DIR, logger)).toEqual([]);
  });

  it('the table refuses what the domain refuses', async () => {
    for (const sql of [
      "INSERT INTO products (name, category, price) VALUES ('', 'c', 1)",
      "INSERT INTO products (name, category, price) VALUES ('n', '', 1)",
      "INSERT INTO products (name, category, price) VALUES ('n', 'c', -0.01)",
      "INSERT INTO products (name, category, price) VALUES ('n', 'c', 10000000000)",
    ]) {
      await expect(db.query(sql)).rejects.toThrow();
    }
  });

  // With sequential scans, bitmap scans and explicit sorts priced out, the planner can only avoid a
  // Sort node when an index already yields the order: proof that every allowed listing has one.
  const listings = Object.entries(SORT_SQL).flatMap(([sort, orders]) =>
    Object.entries(orders).flatMap(([order, orderBy]) => [
      [`sort=${sort} order=${order}`, `SELECT id FROM products ORDER BY ${orderBy} LIMIT 10 OFFSET 20`],
      [`category + sort=${sort} order=${order}`, `SELECT id FROM products WHERE category = 'books' ORDER BY ${orderBy} LIMIT 10`],
    ]),
  );
  it.each(listings)('an index serves %s without sorting', async (_label, sql) => {
    const plan = await db.session(async (conn) => {
      await conn.exec('SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off');
      try {
        const { rows } = await conn.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await conn.exec('RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort');
      }
    });
    expect(plan).toMatch(/Index (Only )?Scan/);
    expect(plan).not.toMatch(/Sort/);
  });
});

describe('demo seed', () => {
  it('seeds at least 40 products across books, electronics and games', async () => {
    await seedDemoData(db, logger);
    expect(DEMO_COUNT).toBeGreaterThanOrEqual(40);
    const { rows } = await db.query<{ category: string; n: number }>(
      'SELECT category, count(*)::int AS n FROM products GROUP BY category ORDER BY category',
    );
    expect(rows.map((r) => r.category)).toEqual(['books', 'electronics', 'games']);
    for (const r of rows) expect(r.n).toBeGreaterThanOrEqual(10);
    expect(rows.reduce((n, r) => n + r.n, 0)).toBe(DEMO_COUNT);
    // Fixed, distinct timestamps: sorting by created_at is reproducible.
    const { rows: times } = await db.query<{ n: number }>('SELECT count(DISTINCT created_at)::int AS n FROM products');
    expect(times[0]!.n).toBe(DEMO_COUNT);
  });

  it('seeding again changes nothing', async () => {
    const before = await snapshot();
    await seedDemoData(db, logger);
    await seedDemoData(db, logger);
    expect(await snapshot()).toEqual(before);
  });

  it('a demo product an admin deleted does not come back on restart', async () => {
    const before = await snapshot();
    await db.query('DELETE FROM products WHERE id = $1', [before[0]!.id]);
    await seedDemoData(db, logger);
    expect(await snapshot()).toEqual(before.slice(1));
  });

  it('replicas starting at once seed the set once', async () => {
    const fresh = await openTestDb('catalog_race');
    try {
      await migrate(fresh, MIGRATIONS_DIR, logger);
      await Promise.all([seedDemoData(fresh, logger), seedDemoData(fresh, logger), seedDemoData(fresh, logger)]);
      const { rows } = await fresh.query<{ n: number }>('SELECT count(*)::int AS n FROM products');
      expect(rows[0]!.n).toBe(DEMO_COUNT);
    } finally {
      await fresh.drop();
    }
  });

  it('a service restart with SEED_DEMO_DATA=true neither duplicates nor loses rows', async () => {
    const before = await snapshot();
    for (let i = 0; i < 2; i++) {
      const service = await catalogService.start(testConfig({ SEED_DEMO_DATA: 'true' }), logger, { db });
      await service.stop();
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('SEED_DEMO_DATA', () => {
  it('defaults to on only in development', () => {
    expect(loadCatalogConfig({ DATABASE_URL: DB, HALO_ENV: 'development' }).SEED_DEMO_DATA).toBe(true);
    expect(loadCatalogConfig({ DATABASE_URL: DB, HALO_ENV: 'test' }).SEED_DEMO_DATA).toBe(false);
    expect(loadCatalogConfig({ DATABASE_URL: DB }).SEED_DEMO_DATA).toBe(false);
  });

  it('is refused in production', () => {
    expect(() => loadCatalogConfig({ DATABASE_URL: DB, HALO_ENV: 'production', SEED_DEMO_DATA: 'true' })).toThrow(ConfigError);
    expect(() => loadCatalogConfig({ DATABASE_URL: DB, HALO_ENV: 'production', SEED_DEMO_DATA: 'true' })).toThrow(/SEED_DEMO_DATA/);
  });
});
