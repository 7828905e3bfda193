import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb, type Db } from './db';
import { migrate } from './migrate';
import { openTestDb, TEST_DATABASE_URL, type TestDb } from '../testing';

const dirs: string[] = [];
function migrationsDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'halo-kit-migrations-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const tableExists = async (db: Db, table: string) =>
  (await db.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2', [db.schema, table])).rowCount ===
  1;

const recorded = async (db: Db) =>
  (await db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')).rows.map((r) => r.name);

describe('migrate', () => {
  const open = openTestDb;
  let db: TestDb;
  let dir: string;

  beforeAll(async () => {
    db = await open('kitmig');
    dir = migrationsDir({
      // Written out of order on purpose: name order decides, not creation order.
      '0002_b.sql': `ALTER TABLE a ADD COLUMN note text; CREATE TABLE b (id int PRIMARY KEY REFERENCES a (id));`,
      '0001_a.sql': `CREATE TABLE a (id int PRIMARY KEY); INSERT INTO a VALUES (1), (2);`,
      'README.md': 'not a migration',
    });
  }, 60_000);

  afterAll(async () => {
    await db.drop();
  });

  it('applies every migration in name order on the first run and returns their names', async () => {
    expect(await migrate(db, dir)).toEqual(['0001_a.sql', '0002_b.sql']);
    expect(await tableExists(db, 'a')).toBe(true);
    expect(await tableExists(db, 'b')).toBe(true);
    expect((await db.query('SELECT count(*) AS n FROM a')).rows).toEqual([{ n: 2 }]);
    expect(await recorded(db)).toEqual(['0001_a.sql', '0002_b.sql']);
  });

  it('applies nothing on a second run', async () => {
    expect(await migrate(db, dir)).toEqual([]);
    expect((await db.query('SELECT count(*) AS n FROM a')).rows).toEqual([{ n: 2 }]);
  });

  it('applies only a migration added later', async () => {
    writeFileSync(join(dir, '0003_c.sql'), `CREATE TABLE c (v text); INSERT INTO c VALUES ('three');`);
    expect(await migrate(db, dir)).toEqual(['0003_c.sql']);
    expect((await db.query('SELECT v FROM c')).rows).toEqual([{ v: 'three' }]);
    expect(await recorded(db)).toEqual(['0001_a.sql', '0002_b.sql', '0003_c.sql']);
  });

  it('rolls a failing migration back, does not record it, and names the file', async () => {
    writeFileSync(
      join(dir, '0004_bad.sql'),
      `CREATE TABLE partial (id int); INSERT INTO a VALUES (99); INSERT INTO no_such_table VALUES (1);`,
    );
    writeFileSync(join(dir, '0005_after.sql'), `CREATE TABLE after_bad (id int);`);

    await expect(migrate(db, dir)).rejects.toThrow(/0004_bad\.sql/);

    expect(await tableExists(db, 'partial')).toBe(false);
    expect((await db.query('SELECT 1 FROM a WHERE id = 99')).rowCount).toBe(0);
    // Later migrations do not run past a failure.
    expect(await tableExists(db, 'after_bad')).toBe(false);
    expect(await recorded(db)).toEqual(['0001_a.sql', '0002_b.sql', '0003_c.sql']);
    // The database is still usable (no transaction left open or aborted).
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('applies the fixed migration and the ones after it on the next run', async () => {
    writeFileSync(join(dir, '0004_bad.sql'), `CREATE TABLE partial (id int);`);
    expect(await migrate(db, dir)).toEqual(['0004_bad.sql', '0005_after.sql']);
    expect(await tableExists(db, 'partial')).toBe(true);
    expect(await tableExists(db, 'after_bad')).toBe(true);
  });

  it('treats an empty directory as nothing to do', async () => {
    expect(await migrate(db, migrationsDir({}))).toEqual([]);
  });
});

describe('migrate on postgres, concurrently', () => {
  it('applies each migration exactly once when two replicas migrate the same schema at once', async () => {
    const first = await openTestDb('kitmigc');
    const second = await openDb({ url: TEST_DATABASE_URL, schema: first.schema, poolSize: 2 });
    try {
      // No IF NOT EXISTS: applying a file twice would fail, and the counter table counts runs.
      const dir = migrationsDir({
        '0001_counter.sql': `CREATE TABLE runs (name text NOT NULL); INSERT INTO runs VALUES ('0001');`,
        '0002_slow.sql': `SELECT pg_sleep(0.2); INSERT INTO runs VALUES ('0002'); CREATE TABLE slow (id int);`,
        '0003_more.sql': `INSERT INTO runs VALUES ('0003'); CREATE TABLE more (id int);`,
      });

      const [a, b] = await Promise.all([migrate(first, dir), migrate(second, dir)]);

      expect([...a, ...b].sort()).toEqual(['0001_counter.sql', '0002_slow.sql', '0003_more.sql']);
      const { rows } = await first.query<{ name: string; n: number }>('SELECT name, count(*) AS n FROM runs GROUP BY name ORDER BY name');
      expect(rows).toEqual([
        { name: '0001', n: 1 },
        { name: '0002', n: 1 },
        { name: '0003', n: 1 },
      ]);
      expect(await recorded(first)).toEqual(['0001_counter.sql', '0002_slow.sql', '0003_more.sql']);
    } finally {
      await second.close();
      await first.drop();
    }
  });

  it('releases the lock when a migration fails, so another replica can proceed', async () => {
    const first = await openTestDb('kitmigl');
    const second = await openDb({ url: TEST_DATABASE_URL, schema: first.schema, poolSize: 1 });
    try {
      const dir = migrationsDir({ '0001_bad.sql': `SELECT 1/0;` });
      await expect(migrate(first, dir)).rejects.toThrow(/0001_bad\.sql/);
      writeFileSync(join(dir, '0001_bad.sql'), `CREATE TABLE ok (id int);`);
      // Would wait forever (test timeout) if the failed run had kept the advisory lock.
      expect(await migrate(second, dir)).toEqual(['0001_bad.sql']);
    } finally {
      await second.close();
      await first.drop();
    }
  });
});
