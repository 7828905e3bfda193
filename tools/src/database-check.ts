import pg from 'pg';
import { LaunchError } from './launch-error';

/**
 * `DATABASE_URL` checked once before any service starts, so a configuration that can never work is
 * one readable line instead of every service failing (and being restarted) on its own. A database
 * that does not exist is created when the URL's role may; otherwise the one command that does is
 * shown. The password is never printed.
 */
export async function ensureDatabase(url: string, log: (line: string) => void): Promise<void> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new LaunchError('DATABASE_URL is not a URL (expected postgres://user:password@host:port/database)');
  }
  const where = `${target.hostname}:${target.port || '5432'}`;
  const database = decodeURIComponent(target.pathname.slice(1)) || decodeURIComponent(target.username);
  const role = decodeURIComponent(target.username) || '(default user)';
  try {
    await tryConnect(url);
    return;
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw new LaunchError(describe(err, where, role, database));
  }
  // No such database: create it from the server's maintenance database, as this role.
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const client = new pg.Client({ connectionString: maintenance.href, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
    log(`created database "${database}" on ${where} (it did not exist)`);
  } catch (err) {
    const code = (err as { code?: string }).code;
    // Created meanwhile by someone else: just as good.
    if (code === '42P04') return;
    const how = `psql -h ${target.hostname} -p ${target.port || '5432'} -U postgres -c 'CREATE DATABASE "${database}" OWNER "${role}"'`;
    throw new LaunchError(
      `Database "${database}" does not exist on ${where} and role "${role}" may not create it (${(err as Error).message}); create it with: ${how}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function tryConnect(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** One line per cause, naming what to change. */
function describe(err: unknown, where: string, role: string, database: string): string {
  const e = err as { code?: string; message?: string };
  const message = e.message ?? String(err);
  switch (e.code) {
    case '28P01':
      return `PostgreSQL on ${where} refused the password of role "${role}": check the password in DATABASE_URL`;
    case '28000':
      return `PostgreSQL on ${where} does not let role "${role}" log in to "${database}" (${message}): check the user in DATABASE_URL and pg_hba.conf`;
    case 'ECONNREFUSED':
      return `Nothing answers on ${where} (DATABASE_URL): start PostgreSQL there, or unset DATABASE_URL to use the embedded one`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Unknown host in DATABASE_URL: ${where.replace(/:\d+$/, '')}`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ETIMEDOUT':
      return `Cannot reach ${where} (DATABASE_URL): ${message}`;
    default:
      if (/timeout/i.test(message)) return `PostgreSQL on ${where} did not answer within 5 s (DATABASE_URL)`;
      return `Cannot use DATABASE_URL (${where}/${database}): ${message}`;
  }
}
