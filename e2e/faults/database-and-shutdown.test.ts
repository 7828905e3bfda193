import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { TEST_DATABASE_URL } from '@halo/kit/testing';
import { bearer, startE2ESystem } from '../helpers';

/**
 * Two faults on the real system (real Postgres, every process separate):
 * - every database connection of a service is killed under it (pg_terminate_backend): requests
 *   fail cleanly or succeed, never hang or crash the process, and the pool recovers by itself;
 * - the gateway gets SIGTERM while payments are in flight: every one of them is answered (0
 *   failed), because the gateway drains before it exits.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let admin: pg.Client;

beforeAll(async () => {
  // Each payment takes 1 s at the (simulated) processor: long enough to be in flight at SIGTERM.
  sys = await startE2ESystem({ postgres: true, envFor: { payments: { PAYMENTS_PROCESSOR_LATENCY_MS: '1000' } } });
  admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await sys?.stop();
});

const get = (path: string) => fetch(`${sys.url}${path}`, { signal: AbortSignal.timeout(10_000) });

it("content's connections killed under it: clean answers, no hang, no crash, and the pool recovers", async () => {
  expect((await get('/posts/2')).status).toBe(200);
  const content = sys.system.processes.find((p) => p.name === 'content')!;
  const pid = content.child.pid;
  const killed = await admin.query<{ n: string }>(
    'SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity WHERE application_name = $1',
    [`halo:content:${sys.schemas.content}`],
  );
  expect(Number(killed.rows[0]!.n)).toBeGreaterThan(0);

  const statuses: number[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await get('/posts/2');
    statuses.push(res.status);
    const body = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) {
      // A contract error: `{"error": …}`, a 5xx the client may retry, no stack or SQL.
      expect(res.status).toBeGreaterThanOrEqual(500);
      expect(Object.keys(body)).toEqual(['error']);
      expect(JSON.stringify(body)).not.toMatch(/terminat|postgres|at \w+ \(/i);
    }
  }
  // Recovered without a restart: the last answers are all good, from the same process.
  expect(statuses.slice(-5)).toEqual([200, 200, 200, 200, 200]);
  expect(content.child.pid).toBe(pid);
  expect(content.restarts).toBe(0);
});

it('SIGTERM at the gateway with payments in flight: every one of them is answered', async () => {
  const gateway = sys.system.processes.find((p) => p.name === 'gateway')!;
  const headers = { 'content-type': 'application/json', ...bearer('2', 'Alice', 'user') };
  const inFlight = Array.from({ length: 10 }, () =>
    fetch(`${sys.url}/api/payments`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: JSON.stringify({ amount: 12.5 }),
      signal: AbortSignal.timeout(15_000),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { data?: { status?: string } } })),
  );
  // The requests are at payments (1 s each) when the signal comes.
  await new Promise((r) => setTimeout(r, 300));
  gateway.child.kill('SIGTERM');
  const answers = await Promise.all(inFlight);
  expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
  expect(answers.every((a) => a.body.data?.status === 'succeeded')).toBe(true);
});
