import { signAccessToken } from '@halo/kit/auth';
import type { Db } from '@halo/kit/db';
import {
  minutesAfter,
  postGraphQL,
  startTestService,
  TEST_JWT_SECRET,
  TEST_SERVICE_ENV,
  testIdentityEnv,
  type TestService,
} from '@halo/kit/testing';
import { contentService, type ContentService } from '../src/service';

export type { TestDb } from '@halo/kit/testing';

export type TestContent = TestService<ContentService>;

export const testConfig = (extra: Record<string, string> = {}) =>
  contentService.loadConfig({ ...TEST_SERVICE_ENV, ...testIdentityEnv('content'), ...extra });

/** The real service, in-process, on a throwaway Postgres schema of its own (one per test file). */
export const startTestContent = (extra: Record<string, string> = {}): Promise<TestContent> => startTestService(contentService, extra);

/** A fixed clock for created_at values, so ordering never depends on when the test runs. */
export const at = minutesAfter;

export interface InsertedUser {
  id: number;
  name: string;
  email: string;
}

/** Inserts many users in one statement; rows come back in the order given. */
export async function insertUsers(
  db: Db,
  users: { name: string; email: string; role?: string; avatar?: string }[],
): Promise<InsertedUser[]> {
  const { rows } = await db.query<InsertedUser>(
    `INSERT INTO users (name, email, role, avatar)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
     RETURNING id, name, email`,
    [users.map((u) => u.name), users.map((u) => u.email), users.map((u) => u.role ?? 'user'), users.map((u) => u.avatar ?? null)],
  );
  const byEmail = new Map(rows.map((r) => [r.email, r]));
  return users.map((u) => byEmail.get(u.email)!);
}

export interface InsertedPost {
  id: number;
  userId: number;
  title: string;
  createdAt: string;
}

/** Inserts many posts in one statement with explicit created_at; titles must be unique. */
export async function insertPosts(
  db: Db,
  posts: { userId: number; title: string; body?: string; createdAt: string }[],
): Promise<InsertedPost[]> {
  const { rows } = await db.query<{ id: number; user_id: number; title: string; created_at: Date }>(
    `INSERT INTO posts (user_id, title, body, created_at)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[])
     RETURNING id, user_id, title, created_at`,
    [posts.map((p) => p.userId), posts.map((p) => p.title), posts.map((p) => p.body ?? ''), posts.map((p) => p.createdAt)],
  );
  const byTitle = new Map(rows.map((r) => [r.title, r]));
  return posts.map((p) => {
    const r = byTitle.get(p.title)!;
    return { id: r.id, userId: r.user_id, title: r.title, createdAt: r.created_at.toISOString() };
  });
}

/** Inserts many comments in one statement with explicit created_at. */
export async function insertComments(
  db: Db,
  comments: { postId: number; userId: number; body: string; createdAt: string }[],
): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO comments (post_id, user_id, body, created_at)
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[])`,
    [comments.map((c) => c.postId), comments.map((c) => c.userId), comments.map((c) => c.body), comments.map((c) => c.createdAt)],
  );
  return rowCount;
}

/** POSTs one GraphQL operation as JSON, the way the gateway calls a subgraph. */
export const gql = postGraphQL;

/** `Authorization` header for a token signed with the test secret (as auth would issue it). */
/** `Authorization` for user `id` with `role`. */
export function bearerFor(id: number, role: 'user' | 'admin' = 'user'): Record<string, string> {
  return { authorization: `Bearer ${signAccessToken({ sub: String(id), name: `user ${id}`, role }, TEST_JWT_SECRET, 300)}` };
}

export function bearer(role: 'user' | 'admin', extra: { scope?: string; akid?: string } = {}): Record<string, string> {
  const token = signAccessToken({ sub: role === 'admin' ? '1' : '2', name: role, role, ...extra }, TEST_JWT_SECRET, 300);
  return { authorization: `Bearer ${token}` };
}
