import { signAccessToken } from '@halo/kit/auth';
import type { Db } from '@halo/kit/db';
import {
  callRest,
  minutesAfter,
  postGraphQL,
  startTestService,
  TEST_JWT_SECRET,
  TEST_SERVICE_ENV,
  testIdentityEnv,
  type TestService,
} from '@halo/kit/testing';
import { catalogService, type CatalogService } from '../src/service';

export type { TestDb } from '@halo/kit/testing';

export type TestCatalog = TestService<CatalogService>;

export const testConfig = (extra: Record<string, string> = {}) =>
  catalogService.loadConfig({ ...TEST_SERVICE_ENV, ...testIdentityEnv('catalog'), ...extra });

/** The real service, in-process, on a throwaway Postgres schema of its own (one per test file). */
export const startTestCatalog = (extra: Record<string, string> = {}): Promise<TestCatalog> => startTestService(catalogService, extra);

/** A fixed clock for created_at values, so ordering never depends on when the test runs. */
export const at = minutesAfter;

export interface Row {
  name: string;
  category: string;
  /** Cents. */
  price: number;
  createdAt: string;
  description?: string;
}

export interface InsertedProduct extends Row {
  id: number;
}

/** Inserts many products in one statement, in the order given (ids ascend with it). */
export async function insertProducts(db: Db, rows: Row[]): Promise<InsertedProduct[]> {
  const { rows: out } = await db.query<{ id: number; ord: number }>(
    `INSERT INTO products (name, category, price, description, created_at, updated_at)
     SELECT name, category, cents / 100.0, description, created_at, created_at
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[]) WITH ORDINALITY
       AS t(name, category, cents, description, created_at, ord)
     ORDER BY ord
     RETURNING id`,
    [
      rows.map((r) => r.name),
      rows.map((r) => r.category),
      rows.map((r) => r.price),
      rows.map((r) => r.description ?? ''),
      rows.map((r) => r.createdAt),
    ],
  );
  const ids = out.map((r) => r.id).sort((a, b) => a - b);
  return rows.map((r, i) => ({ ...r, id: ids[i]! }));
}

/** POSTs one GraphQL operation as JSON, the way the gateway calls a subgraph. */
export const gql = postGraphQL;

/**
 * `Authorization` headers for the callers the contract distinguishes, signed with the test secret
 * the way auth issues them (an API key is exchanged for a token that carries its scopes).
 */
const token = (role: 'user' | 'admin', scope?: string) =>
  signAccessToken(
    { sub: role === 'admin' ? '1' : '2', name: role, role, ...(scope === undefined ? {} : { scope, akid: 'k1' }) },
    TEST_JWT_SECRET,
    300,
  );
export const AS = {
  admin: () => ({ authorization: `Bearer ${token('admin')}` }),
  user: () => ({ authorization: `Bearer ${token('user')}` }),
  writeKey: () => ({ authorization: `Bearer ${token('admin', 'catalog:write')}` }),
  otherKey: () => ({ authorization: `Bearer ${token('admin', 'profile:read')}` }),
  userKey: () => ({ authorization: `Bearer ${token('user', 'catalog:write')}` }),
  badToken: () => ({ authorization: 'Bearer not-a-token' }),
  foreign: () => ({
    authorization: `Bearer ${signAccessToken({ sub: '1', name: 'x', role: 'admin' }, 'someone-elses-secret-of-32-bytes-or-more', 300)}`,
  }),
};

/** One REST call (kit testing's callRest). */
export const call = callRest;
