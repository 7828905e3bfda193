import { openDb } from './db';
import { dropSchema, openTestDb, TEST_DATABASE_URL, throwawaySchema, type TestDb } from '../testing';

const open = openTestDb;

describe('Db', () => {
  let db: TestDb;

  beforeAll(async () => {
    db = await open('kitdb');
    await db.exec(`
      CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE, price numeric(10, 2), qty int8);
      INSERT INTO items (name, price, qty) VALUES ('apple', 1.25, 10), ('pear', 2.50, 20);
    `);
  }, 60_000);

  afterAll(async () => {
    await db.drop();
  });

  it('reports its schema, and the schema is the search_path', async () => {
    expect(db.schema).toMatch(/^t_kitdb_[0-9a-f]{8}$/);
    const { rows } = await db.query<{ schema: string }>('SELECT current_schema() AS schema');
    expect(rows).toEqual([{ schema: db.schema }]);
    const tables = await db.query('SELECT table_schema FROM information_schema.tables WHERE table_name = $1', ['items']);
    expect(tables.rows).toEqual([{ table_schema: db.schema }]);
  });

  it('runs parameterised queries', async () => {
    const { rows, rowCount } = await db.query<{ name: string }>('SELECT name FROM items WHERE name = $1 OR qty = $2 ORDER BY name', [
      'apple',
      20,
    ]);
    expect(rows).toEqual([{ name: 'apple' }, { name: 'pear' }]);
    expect(rowCount).toBe(2);
    const sum = await db.query<{ sum: number }>('SELECT $1::int + $2::int AS sum', [2, 3]);
    expect(sum.rows[0]!.sum).toBe(5);
  });

  it('does not interpolate parameters into SQL', async () => {
    const evil = "x'); DROP TABLE items; --";
    const { rows } = await db.query('SELECT id FROM items WHERE name = $1', [evil]);
    expect(rows).toEqual([]);
    expect((await db.query('SELECT 1 FROM items')).rowCount).toBeGreaterThan(0);
  });

  it('returns int8 and numeric as JS numbers', async () => {
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT count(*) AS n, sum(qty) AS total_qty, sum(price) AS total_price, max(id) AS max_id,
              5::int8 AS eight, 12.50::numeric AS money
       FROM items`,
    );
    expect(rows[0]).toEqual({ n: 2, total_qty: 30, total_price: 3.75, max_id: expect.any(Number), eight: 5, money: 12.5 });
    for (const value of Object.values(rows[0]!)) expect(typeof value).toBe('number');
  });

  it('returns an int8 beyond 2^53 as a number too (never a BigInt that JSON cannot encode)', async () => {
    const { rows } = await db.query<{ huge: unknown }>('SELECT 9007199254740993::int8 AS huge');
    expect(typeof rows[0]!.huge).toBe('number');
    expect(() => JSON.stringify(rows)).not.toThrow();
  });

  it('reports rowCount for writes', async () => {
    await db.exec(`CREATE TABLE counts (k text PRIMARY KEY, v int NOT NULL)`);
    const ins = await db.query('INSERT INTO counts (k, v) VALUES ($1, 1), ($2, 1), ($3, 1)', ['a', 'b', 'c']);
    expect(ins.rowCount).toBe(3);
    const upd = await db.query('UPDATE counts SET v = v + 1 WHERE k <> $1', ['a']);
    expect(upd.rowCount).toBe(2);
    const del = await db.query('DELETE FROM counts WHERE k = $1', ['missing']);
    expect(del.rowCount).toBe(0);
    const ret = await db.query<{ id: number }>('INSERT INTO items (name) VALUES ($1) RETURNING id', ['fig']);
    expect(ret.rowCount).toBe(1);
    expect(typeof ret.rows[0]!.id).toBe('number');
  });

  it('commits a transaction and returns its result', async () => {
    const out = await db.transaction(async (tx) => {
      await tx.query('INSERT INTO items (name, qty) VALUES ($1, $2)', ['kiwi', 1]);
      await tx.query('UPDATE items SET qty = qty - 1 WHERE name = $1', ['apple']);
      return 'done';
    });
    expect(out).toBe('done');
    const { rows } = await db.query('SELECT name, qty FROM items WHERE name IN ($1, $2) ORDER BY name', ['apple', 'kiwi']);
    expect(rows).toEqual([
      { name: 'apple', qty: 9 },
      { name: 'kiwi', qty: 1 },
    ]);
  });

  it('rolls a transaction back when its function throws, and rethrows the error', async () => {
    const boom = new Error('boom');
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO items (name) VALUES ($1)', ['ghost']);
        await tx.query('UPDATE items SET qty = 0 WHERE name = $1', ['pear']);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect((await db.query('SELECT 1 FROM items WHERE name = $1', ['ghost'])).rowCount).toBe(0);
    expect((await db.query('SELECT qty FROM items WHERE name = $1', ['pear'])).rows).toEqual([{ qty: 20 }]);
  });

  it('rolls a transaction back when a statement fails', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO items (name) VALUES ($1)', ['plum']);
        await tx.query('INSERT INTO items (name) VALUES ($1)', ['apple']); // unique violation
      }),
    ).rejects.toThrow(/duplicate key|unique/i);
    expect((await db.query('SELECT 1 FROM items WHERE name = $1', ['plum'])).rowCount).toBe(0);
    // The connection is usable afterwards (not left in an aborted transaction).
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('executes a multi-statement script', async () => {
    await db.exec(`
      CREATE TABLE script (n int);
      INSERT INTO script VALUES (1);
      INSERT INTO script VALUES (2);
      UPDATE script SET n = n * 10;
    `);
    const { rows } = await db.query('SELECT n FROM script ORDER BY n');
    expect(rows).toEqual([{ n: 10 }, { n: 20 }]);
  });

  it('counts statements in stats.queries', async () => {
    const before = db.stats.queries;
    await db.query('SELECT 1');
    expect(db.stats.queries).toBe(before + 1);
    await db.exec('SELECT 1; SELECT 2');
    expect(db.stats.queries).toBe(before + 2);
    await db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await tx.query('SELECT 2');
    });
    // Statements inside a transaction count too (BEGIN and COMMIT are statements as well).
    expect(db.stats.queries).toBeGreaterThanOrEqual(before + 4);
  });

  it('runs a session on one connection', async () => {
    const pids = await db.session(async (conn) => {
      const a = await conn.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const b = await conn.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      return [a.rows[0]!.pid, b.rows[0]!.pid];
    });
    expect(pids[0]).toBe(pids[1]);
  });

  it('pings', async () => {
    await expect(db.ping()).resolves.toBeUndefined();
  });

  it('keeps its schema apart from another test database', async () => {
    await db.exec(`CREATE TABLE only_here (v text); INSERT INTO only_here VALUES ('mine')`);
    const other = await open('kitdb');
    try {
      expect(other.schema).not.toBe(db.schema);
      await expect(other.query('SELECT * FROM only_here')).rejects.toThrow(/does not exist/);
      await other.exec(`CREATE TABLE only_here (v text); INSERT INTO only_here VALUES ('theirs')`);
      expect((await other.query('SELECT v FROM only_here')).rows).toEqual([{ v: 'theirs' }]);
      expect((await db.query('SELECT v FROM only_here')).rows).toEqual([{ v: 'mine' }]);
    } finally {
      await other.drop();
    }
  }, 60_000);
});

describe('openDb', () => {
  it('names its connections in pg_stat_activity: halo:<schema> by default, or as told', async () => {
    const schema = throwawaySchema('kitapp');
    const plain = await openDb({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    const named = await openDb({ url: TEST_DATABASE_URL, schema, poolSize: 1, applicationName: `halo:content:${schema}` });
    const nameOf = async (db: typeof plain) =>
      (await db.query<{ name: string }>('SELECT application_name AS name FROM pg_stat_activity WHERE pid = pg_backend_pid()')).rows[0]!
        .name;
    try {
      expect(await nameOf(plain)).toBe(`halo:${schema}`);
      expect(await nameOf(named)).toBe(`halo:content:${schema}`);
    } finally {
      await plain.close();
      await named.close();
      await dropSchema(schema);
    }
  });

  it.each(['Bad', 'has-dash', '1starts_with_digit', 'x"; DROP SCHEMA public; --', '', 'a'.repeat(64)])(
    'refuses the schema name %p',
    async (schema) => {
      await expect(openDb({ url: TEST_DATABASE_URL, schema })).rejects.toThrow('Invalid schema name');
    },
  );
});

describe('Db transactions', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await openTestDb('kitpg');
    await db.exec('CREATE TABLE tx_probe (v text)');
  });
  afterAll(async () => {
    await db.drop();
  });

  it('runs a transaction on its own connection: others do not see uncommitted rows', async () => {
    await db.transaction(async (tx) => {
      await tx.query(`INSERT INTO tx_probe VALUES ('pending')`);
      // A pool query uses another connection, which must not see the open transaction's row.
      expect((await db.query('SELECT 1 FROM tx_probe')).rowCount).toBe(0);
    });
    expect((await db.query('SELECT 1 FROM tx_probe')).rowCount).toBe(1);
  });

  it('creates the schema when it is missing and reuses it when it exists', async () => {
    const schema = throwawaySchema('kitpg');
    const first = await openDb({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    const second = await openDb({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    try {
      await first.exec(`CREATE TABLE shared (v int); INSERT INTO shared VALUES (7)`);
      expect((await second.query('SELECT v FROM shared')).rows).toEqual([{ v: 7 }]);
    } finally {
      await first.close();
      await second.close();
      await dropSchema(schema);
    }
  });
});
