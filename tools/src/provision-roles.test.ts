import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { roleUrl } from '@halo/kit/launch';
import { TEST_DATABASE_URL } from '@halo/kit/testing';
import { passwordVar, provisionFromEnv, provisionPlan } from './provision-roles';

/**
 * The chart's optional role-provisioning hook, against the real PostgreSQL: a database and two
 * roles of its own (never the real service names: roles are server-wide), all dropped after.
 */
const suffix = randomBytes(4).toString('hex');
const database = `t_prov_${suffix}`;
const services = [`t_pa_${suffix}`, `t_pb_${suffix}`];
const env = {
  ADMIN_DATABASE_URL: TEST_DATABASE_URL,
  HALO_DATABASE: database,
  HALO_SERVICES: services.join(', '),
  [passwordVar(services[0]!)]: randomBytes(12).toString('hex'),
  [passwordVar(services[1]!)]: randomBytes(12).toString('hex'),
};

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await query(TEST_DATABASE_URL, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  for (const name of services) await query(TEST_DATABASE_URL, `DROP ROLE IF EXISTS ${name}`);
});

it('creates the database and one role per service that owns its schema, and logs no secret', async () => {
  const lines: string[] = [];
  await provisionFromEnv(env, (line) => lines.push(line));

  for (const name of services) {
    const url = roleUrl(TEST_DATABASE_URL, { name, password: env[passwordVar(name)]! }, database);
    const [row] = await query<{ role: string; owner: string }>(
      url,
      'SELECT current_user AS role, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = $1',
      [name],
    );
    expect(row).toEqual({ role: name, owner: name });
  }
  expect(lines).toEqual(services.map((s) => `role ${s}: owns schema ${s} in database ${database}`));
  expect(lines.join('\n')).not.toContain(env[passwordVar(services[0]!)]);
});

it('is idempotent: a second run keeps what the services created', async () => {
  const [a] = services;
  const url = roleUrl(TEST_DATABASE_URL, { name: a!, password: env[passwordVar(a!)]! }, database);
  await query(url, `CREATE TABLE ${a}.kept (v text); INSERT INTO ${a}.kept VALUES ('still here')`);
  await provisionFromEnv(env);
  expect(await query(url, `SELECT v FROM ${a}.kept`)).toEqual([{ v: 'still here' }]);
});

it('names the missing variable', () => {
  expect(() => provisionPlan({})).toThrow('ADMIN_DATABASE_URL is required');
  expect(() => provisionPlan({ ADMIN_DATABASE_URL: 'not a url' })).toThrow('ADMIN_DATABASE_URL must be a postgres:// URL');
  expect(() => provisionPlan({ ADMIN_DATABASE_URL: TEST_DATABASE_URL })).toThrow('HALO_SERVICES is required');
  expect(() => provisionPlan({ ADMIN_DATABASE_URL: TEST_DATABASE_URL, HALO_SERVICES: 'auth,content', AUTH_DB_PASSWORD: 'x' })).toThrow(
    'CONTENT_DB_PASSWORD is required',
  );
  expect(provisionPlan({ ADMIN_DATABASE_URL: TEST_DATABASE_URL, HALO_SERVICES: 'auth', AUTH_DB_PASSWORD: 'x' })).toEqual({
    adminUrl: TEST_DATABASE_URL,
    database: 'halo',
    roles: [{ name: 'auth', password: 'x' }],
  });
});
