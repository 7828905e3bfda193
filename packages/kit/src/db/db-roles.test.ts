import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDb, type Db } from './db';
import { provisionServiceRoles, roleUrl, type ServiceRole } from './db-roles';
import { TEST_DATABASE_URL } from '../testing';

/**
 * Real Postgres: a database of its own with two service roles, as the embedded launcher makes
 * them. Each role may use only its own schema.
 */
const suffix = randomBytes(4).toString('hex');
const database = `t_roles_${suffix}`;
const alpha: ServiceRole = { name: `t_alpha_${suffix}`, password: randomBytes(12).toString('hex') };
const beta: ServiceRole = { name: `t_beta_${suffix}`, password: "it's a 'quoted' password" };
const opened: Db[] = [];

async function admin(sql: string, url = TEST_DATABASE_URL): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const open = async (role: ServiceRole, schema = role.name) => {
  const db = await openDb({ url: roleUrl(TEST_DATABASE_URL, role, database), schema, poolSize: 1 });
  opened.push(db);
  return db;
};

beforeAll(async () => {
  await provisionServiceRoles(TEST_DATABASE_URL, database, [alpha, beta]);
});

afterAll(async () => {
  for (const db of opened) await db.close();
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin(`DROP ROLE IF EXISTS ${alpha.name}`);
  await admin(`DROP ROLE IF EXISTS ${beta.name}`);
});

it('gives each role its own schema, where it can create tables and write', async () => {
  const a = await open(alpha);
  await a.exec(`CREATE TABLE secrets (v text); INSERT INTO secrets VALUES ('alpha only')`);
  expect((await a.query('SELECT v FROM secrets')).rows).toEqual([{ v: 'alpha only' }]);
  const owner = await a.query<{ owner: string }>('SELECT tableowner AS owner FROM pg_tables WHERE tablename = $1', ['secrets']);
  expect(owner.rows).toEqual([{ owner: alpha.name }]);
});

it("refuses another service's schema, the public schema, and new schemas", async () => {
  const b = await open(beta);
  await expect(b.query(`SELECT v FROM ${alpha.name}.secrets`)).rejects.toThrow(/permission denied for schema/);
  await expect(b.exec('CREATE TABLE public.sneaky (v int)')).rejects.toThrow(/permission denied for schema public/);
  await expect(b.exec('CREATE SCHEMA extra')).rejects.toThrow(/permission denied/);
  // Opening a pool on someone else's schema fails as well: the role may not create it or use it.
  await expect(openDb({ url: roleUrl(TEST_DATABASE_URL, beta, database), schema: 'other_schema', poolSize: 1 })).rejects.toThrow(
    /permission denied/,
  );
});

// This machine's server trusts loopback connections, so password checks (and their rotation on
// every start) are proved against the embedded server instead (e2e/embedded.test.ts).
it('is idempotent: provisioning again keeps every schema and row', async () => {
  const rotated = { ...alpha, password: randomBytes(12).toString('hex') };
  await provisionServiceRoles(TEST_DATABASE_URL, database, [rotated, beta]);
  const a = await open(rotated);
  expect((await a.query('SELECT v FROM secrets')).rows).toEqual([{ v: 'alpha only' }]);
});

it('refuses names that are not plain SQL identifiers', async () => {
  await expect(provisionServiceRoles(TEST_DATABASE_URL, database, [{ name: 'Robert"); DROP', password: 'x' }])).rejects.toThrow(
    'Invalid database or role name',
  );
});
