import { randomUUID } from 'node:crypto';
import { signAccessToken } from '@halo/kit/auth';
import { openRedis, redisReady, type Db, type Redis } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import {
  callRest,
  postGraphQL,
  startTestService,
  TEST_JWT_SECRET,
  TEST_SERVICE_ENV,
  testIdentityEnv,
  type TestService,
} from '@halo/kit/testing';
import { paymentsService, type PaymentsService } from '../src/service';
// The real catalog through its package (built by `npm run build`), never its sources.
import { catalogService } from '@halo/catalog';

export type { TestDb } from '@halo/kit/testing';

export type TestPayments = TestService<PaymentsService>;

/** The real Redis the suites use (CI starts it; see README). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** A Redis address where nothing listens: "Redis is down", without stopping the shared server. */
export const CLOSED_REDIS_URL = 'redis://127.0.0.1:1';

export const testConfig = (extra: Record<string, string> = {}) =>
  paymentsService.loadConfig({ ...TEST_SERVICE_ENV, ...testIdentityEnv('payments'), ...extra });

/** The real service, in-process, on a throwaway Postgres schema of its own (one per test file). */
export const startTestPayments = (extra: Record<string, string> = {}): Promise<TestPayments> => startTestService(paymentsService, extra);

/**
 * A second replica of a running test service: another process's worth of service (its own HTTP
 * server, processor and Redis client) on the SAME schema and the same Redis namespace.
 */
export async function startReplica(t: TestPayments, extra: Record<string, string> = {}) {
  const service = await paymentsService.start(testConfig(extra), createLogger('payments', 'silent'), { db: t.db });
  return { service, base: `http://127.0.0.1:${service.httpPort}`, stop: () => service.stop() };
}

/** catalog in-process (it trusts the test key of payments, its caller in the topology), with a few products. */
export async function startTestCatalog() {
  const t = await startTestService(catalogService);
  const { rows } = await t.db.query<{ id: number }>(
    `INSERT INTO products (name, category, price) VALUES ('Kopi', 'food', 19.99), ('Teh', 'food', 4.5), ('Buku', 'books', 12.5) RETURNING id`,
  );
  return { ...t, productIds: rows.map((r) => r.id).sort((a, b) => a - b), grpcAddr: `127.0.0.1:${t.service.grpcPort}` };
}

/** A Redis client for the test itself (inspecting and changing keys); close it with `disconnect()`. */
export async function testRedis(): Promise<Redis> {
  const redis = openRedis(TEST_REDIS_URL, createLogger('test', 'silent'), { enableOfflineQueue: true });
  if (!(await redisReady(redis))) throw new Error(`Redis is not reachable at ${TEST_REDIS_URL}`);
  return redis;
}

/** The service's Redis namespace (`halo:<schema>`): one per test file, so files never meet. */
export const namespaceOf = (db: Db) => `halo:${db.schema}`;

/** Deletes this namespace's keys only (other test files share the Redis: never FLUSHALL). */
export async function flushNamespace(redis: Redis, db: Db): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${namespaceOf(db)}:*`, 'COUNT', 500);
    cursor = next;
    if (keys.length) deleted += await redis.del(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** The keys of this namespace that exist now. */
export async function namespaceKeys(redis: Redis, db: Db): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${namespaceOf(db)}:*`, 'COUNT', 500);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out.sort();
}

/**
 * `Authorization` headers as auth issues them: a user's own token, or the token an API key is
 * exchanged for (it carries the key's scopes).
 */
export const AS = {
  user: (id: number, name = `user${id}`) => ({
    authorization: `Bearer ${signAccessToken({ sub: String(id), name, role: 'user' }, TEST_JWT_SECRET, 300)}`,
  }),
  key: (id: number, scope: string) => ({
    authorization: `Bearer ${signAccessToken({ sub: String(id), name: `user${id}`, role: 'admin', scope, akid: 'k1' }, TEST_JWT_SECRET, 300)}`,
  }),
  badToken: () => ({ authorization: 'Bearer not-a-token' }),
};

export const newKey = () => randomUUID();

/** One REST call (kit testing's callRest). */
export const call = callRest;

/** `POST /api/payments` as `user` with `key` (omitted when null). */
export const pay = (base: string, key: string | null, body: unknown, headers: Record<string, string> = AS.user(7)) =>
  call(base, 'POST', '/api/payments', { body, headers: { ...headers, ...(key === null ? {} : { 'idempotency-key': key }) } });

/** POSTs one GraphQL operation as JSON, the way the gateway calls a subgraph. */
export const gql = postGraphQL;

/** Rows of the payments table for one key (all callers). */
export async function paymentRows(db: Db, key: string) {
  const { rows } = await db.query<{ id: number; user_id: number; status: string }>(
    'SELECT id, user_id, status FROM payments WHERE idempotency_key = $1 ORDER BY id',
    [key],
  );
  return rows;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
