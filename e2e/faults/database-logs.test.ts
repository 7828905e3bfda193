import pg from 'pg';
import { startE2ESystem } from '../helpers';

/**
 * When PostgreSQL drops a service's connections, what reaches the logs is the error's message,
 * code and stack, not the database client behind it (node-postgres hangs the whole client, with
 * its settings and the backend's cancel key, on an idle client's error). Run as `npm start` runs:
 * the embedded PostgreSQL, each service with its own role and password.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let admin: pg.Client;

beforeAll(async () => {
  sys = await startE2ESystem();
  admin = new pg.Client({ connectionString: sys.system.postgres!.adminUrl });
  await admin.connect();
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await sys?.stop();
});

/** What a log line of the database client would hold, and what never belongs in a log. */
const CLIENT_STATE = /secretKey|processID|connectionParameters|_events|"client"/;
/** Generous for a message, a code and a dozen stack frames; the pg client was ~5 KB. */
const MAX_LINE = 2_500;

it("content's connections terminated: the error is logged small, without the client, its key or its password", async () => {
  expect((await fetch(`${sys.url}/posts/2`)).status).toBe(200);
  const before = sys.logs.length;
  const killed = await admin.query<{ n: string }>(
    "SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity WHERE application_name LIKE 'halo:content:%'",
  );
  expect(Number(killed.rows[0]!.n)).toBeGreaterThan(0);
  // Requests over the broken pool: some fail (and are logged), then it recovers.
  for (let i = 0; i < 10; i++) await fetch(`${sys.url}/posts/2`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.arrayBuffer());
  // Log lines are flushed at least every 250 ms.
  await new Promise((r) => setTimeout(r, 1_000));

  const lines = sys.logs.slice(before).filter((l) => l.startsWith('content|'));
  const failures = lines.filter((l) => l.includes('57P01') || l.includes('terminating connection'));
  // The failure is there to read: type, message and SQLSTATE.
  expect(failures.length).toBeGreaterThan(0);
  const password = decodeURIComponent(new URL(sys.system.postgres!.databaseUrls.content).password);
  expect(password.length).toBeGreaterThan(10);
  for (const line of lines) {
    const seen = line.slice(0, 300);
    expect({ seen, length: line.length <= MAX_LINE }).toEqual({ seen, length: true });
    expect({ seen, clientState: CLIENT_STATE.test(line), password: line.includes(password) }).toEqual({
      seen,
      clientState: false,
      password: false,
    });
  }
});
