import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import pg from 'pg';
import { dropSchema, TEST_DATABASE_URL, TEST_SERVICE_ENV, throwawaySchema } from '@halo/kit/testing';

/**
 * `HALO_MIGRATE_ONLY=true` is how the Helm chart's pre-install/pre-upgrade Job runs a service's
 * image: apply its migrations, serve nothing, exit 0 — or exit non-zero so the release stops
 * before any pod changes. Each built service entry point, run as that Job runs it.
 */
function runMain(service: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [resolve(__dirname, '../services', service, 'dist/main.js')], {
    env: { PATH: process.env.PATH ?? '', ...TEST_SERVICE_ENV, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise<{ code: number | null; output: string }>((done) => child.on('exit', (code) => done({ code, output })));
}

async function tables(schema: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [schema],
    );
    return rows.map((r) => r.table_name);
  } finally {
    await client.end();
  }
}

describe.each(['auth', 'content', 'catalog', 'payments', 'chat'])('%s with HALO_MIGRATE_ONLY=true', (service) => {
  const schema = throwawaySchema(`migrate_${service}`);
  afterAll(() => dropSchema(schema));

  it('applies its migrations, opens no port, and exits 0; a second run is a no-op', async () => {
    // HTTP_PORT 1 would fail to bind as non-root and is privileged as root: nothing may listen.
    const env = { DB_SCHEMA: schema, HALO_MIGRATE_ONLY: 'true', HTTP_PORT: '1', GRPC_PORT: '1' };
    const first = await runMain(service, env);
    expect(first.code).toBe(0);
    expect(first.output).toContain('migrations applied (HALO_MIGRATE_ONLY): exiting');
    const made = await tables(schema);
    expect(made).toContain('schema_migrations');
    expect(made.length).toBeGreaterThan(1);

    const second = await runMain(service, env);
    expect(second.code).toBe(0);
    expect(await tables(schema)).toEqual(made);
  });

  it('exits non-zero, naming the cause, when the database cannot be reached', async () => {
    const run = await runMain(service, {
      DB_SCHEMA: schema,
      HALO_MIGRATE_ONLY: 'true',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
    });
    expect(run.code).toBe(1);
    const fatal = run.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { code?: string } })
      .find((l) => l.level === 60);
    expect(fatal).toMatchObject({ msg: 'failed to start', err: { code: 'ECONNREFUSED' } });
  });
});
