import { ConfigError } from '@halo/kit/config';
import { migrate } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { openTestDb, SEED_RULE_CASES } from '@halo/kit/testing';
import { seedDemoData } from '../src/db/seed';
import { contentService } from '../src/service';
import { testConfig, type TestDb } from './helpers';

/** Config needs a database URL; these tests only read other settings. */
const DB = 'postgres://svc@db:5432/halo';

const logger = createLogger('content', 'silent');
const MIGRATIONS_DIR = contentService.migrationsDir;
const loadContentConfig = contentService.loadConfig;
let db: TestDb;

async function counts(): Promise<{ users: number; posts: number; comments: number }> {
  const { rows } = await db.query<{ users: number; posts: number; comments: number }>(
    `SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM posts) AS posts, (SELECT count(*) FROM comments) AS comments`,
  );
  return rows[0]!;
}

beforeAll(async () => {
  db = await openTestDb('content');
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
    expect(rows.map((r) => r.table_name)).toEqual(['comments', 'posts', 'schema_migrations', 'users']);
  });

  it('running them again applies nothing', async () => {
    expect(await migrate(db, MIGRATIONS_DIR, logger)).toEqual([]);
    expect((await db.query('SELECT name FROM schema_migrations')).rows).toEqual([{ name: '0001_init.sql' }]);
  });
});

describe('demo seed', () => {
  it('seeds the admin and the demo users; every user has posts and every post has comments', async () => {
    await seedDemoData(db, logger);
    const { rows: users } = await db.query<{ email: string; role: string }>('SELECT email, role FROM users ORDER BY email');
    expect(users).toEqual([
      { email: 'admin@halo.local', role: 'admin' },
      { email: 'alice@halo.local', role: 'user' },
      { email: 'bob@halo.local', role: 'user' },
    ]);
    const { rows: posts } = await db.query<{ email: string; title: string; comments: number }>(
      `SELECT u.email, p.title, (SELECT count(*) FROM comments c WHERE c.post_id = p.id) AS comments
         FROM posts p JOIN users u ON u.id = p.user_id ORDER BY p.id`,
    );
    for (const { email } of users) expect(posts.filter((p) => p.email === email).length).toBeGreaterThan(0);
    // docs/api/auth.md "Seeded demo data": each demo user has posts with comments.
    for (const p of posts) expect(p.comments).toBeGreaterThan(0);
    expect(await counts()).toEqual({ users: 3, posts: 5, comments: 7 });
  });

  it('is idempotent: seeding again neither duplicates nor loses rows', async () => {
    const before = await counts();
    const snapshot = (await db.query('SELECT id, user_id, title, created_at FROM posts ORDER BY id')).rows;
    await seedDemoData(db, logger);
    await seedDemoData(db, logger);
    expect(await counts()).toEqual(before);
    expect((await db.query('SELECT id, user_id, title, created_at FROM posts ORDER BY id')).rows).toEqual(snapshot);
  });

  it('a restart of the service with SEED_DEMO_DATA=true keeps the same rows', async () => {
    const before = await counts();
    for (let i = 0; i < 2; i++) {
      const service = await contentService.start(testConfig({ SEED_DEMO_DATA: 'true' }), logger, { db });
      try {
        const res = await fetch(`http://127.0.0.1:${service.httpPort}/users/1/posts`);
        expect(res.status).toBe(200);
      } finally {
        await service.stop();
      }
    }
    expect(await counts()).toEqual(before);
    expect((await db.query('SELECT name FROM schema_migrations')).rows).toHaveLength(1);
  });
});

describe('config', () => {
  it('refuses SEED_DEMO_DATA=true when HALO_ENV=production, naming the variable', () => {
    for (const value of ['true', '1']) {
      const load = () => loadContentConfig({ DATABASE_URL: DB, HALO_ENV: 'production', SEED_DEMO_DATA: value });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(/SEED_DEMO_DATA/);
    }
  });

  it('rejects a SEED_DEMO_DATA that is not a boolean, naming the variable', () => {
    expect(() => loadContentConfig({ DATABASE_URL: DB, HALO_ENV: 'development', SEED_DEMO_DATA: 'yes' })).toThrow(ConfigError);
    expect(() => loadContentConfig({ DATABASE_URL: DB, HALO_ENV: 'development', SEED_DEMO_DATA: 'yes' })).toThrow(/SEED_DEMO_DATA/);
  });

  it.each(SEED_RULE_CASES)('HALO_ENV=%s SEED_DEMO_DATA=%s → %s', (haloEnv, seed, expected) => {
    expect(loadContentConfig({ DATABASE_URL: DB, HALO_ENV: haloEnv, SEED_DEMO_DATA: seed }).SEED_DEMO_DATA).toBe(expected);
  });
});
