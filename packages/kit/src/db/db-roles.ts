import type { Client } from 'pg';
import { load } from '../process/lazy';
import { SCHEMA_NAME } from './db';

/**
 * One login role per service, owning exactly one schema of the same name: the rule "each service
 * reads and writes only its own schema, through its own database role" (docs/database.md).
 * The embedded launcher runs this against its own server at every start; in production a
 * platform team runs the same statements (`serviceRoleSql`) once, or lets the chart's job do it.
 */
export interface ServiceRole {
  /** Role and schema name, e.g. `content`. */
  name: string;
  password: string;
}

/**
 * The statements for one database, in order; idempotent apart from CREATE ROLE / CREATE DATABASE,
 * which `provisionServiceRoles` guards with a look-up first. Shown in docs/database.md.
 */
export function serviceRoleSql(database: string, role: ServiceRole): string[] {
  const r = ident(role.name);
  const db = ident(database);
  return [
    `ALTER ROLE ${r} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${load.pg().escapeLiteral(role.password)}`,
    `GRANT CONNECT ON DATABASE ${db} TO ${r}`,
    `CREATE SCHEMA IF NOT EXISTS ${r} AUTHORIZATION ${r}`,
    `ALTER SCHEMA ${r} OWNER TO ${r}`,
    `ALTER ROLE ${r} IN DATABASE ${db} SET search_path = ${r}`,
  ];
}

/** Closes the database to everyone who is not granted it, and the `public` schema to everyone. */
export function lockDownSql(database: string): string[] {
  return [`REVOKE ALL ON DATABASE ${ident(database)} FROM PUBLIC`, 'REVOKE ALL ON SCHEMA public FROM PUBLIC'];
}

/**
 * Creates `database` if missing, locks it down, and gives each service its role and schema (new
 * passwords every time: the caller hands them to the services). `adminUrl` is a superuser URL
 * of the same server, pointing at any existing database.
 */
export async function provisionServiceRoles(adminUrl: string, database: string, roles: ServiceRole[]): Promise<void> {
  for (const name of [database, ...roles.map((r) => r.name)]) {
    if (!SCHEMA_NAME.test(name)) throw new Error(`Invalid database or role name: ${name}`);
  }
  await withClient(adminUrl, async (admin) => {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    // CREATE DATABASE cannot run inside a transaction block.
    if (!exists.rowCount) await admin.query(`CREATE DATABASE ${ident(database)}`);
  });
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await withClient(url.href, async (admin) => {
    await admin.query('BEGIN');
    try {
      for (const sql of lockDownSql(database)) await admin.query(sql);
      for (const role of roles) {
        const known = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role.name]);
        if (!known.rowCount) await admin.query(`CREATE ROLE ${ident(role.name)}`);
        for (const sql of serviceRoleSql(database, role)) await admin.query(sql);
      }
      await admin.query('COMMIT');
    } catch (err) {
      await admin.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

/** `url` with the role's credentials: what a service gets as its DATABASE_URL. */
export function roleUrl(url: string, role: ServiceRole, database?: string): string {
  const u = new URL(url);
  u.username = encodeURIComponent(role.name);
  u.password = encodeURIComponent(role.password);
  if (database) u.pathname = `/${database}`;
  return u.href;
}

async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new (load.pg().Client)({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const ident = (name: string) => load.pg().escapeIdentifier(name);
