import DataLoader from 'dataloader';
import type { ContentRepo } from '../domain/content';
import type { Comment, Post, User } from '../domain/model';

function groupBy<T>(rows: T[], key: (row: T) => number): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = out.get(k);
    if (list) list.push(row);
    else out.set(k, [row]);
  }
  return out;
}

/**
 * Per-request batching: every `author`, `posts`, `comments` and entity reference of one GraphQL
 * request collapses into one SQL statement per kind, however many rows are involved.
 */
export function createLoaders(repo: ContentRepo) {
  const userById = new DataLoader<number, User | null>(async (ids) => {
    const found = new Map((await repo.usersByIds(ids)).map((u) => [u.id, u]));
    return ids.map((id) => found.get(id) ?? null);
  });
  const postById = new DataLoader<number, Post | null>(async (ids) => {
    const found = new Map((await repo.postsByIds(ids)).map((p) => [p.id, p]));
    return ids.map((id) => found.get(id) ?? null);
  });
  const postsByUserId = new DataLoader<number, Post[]>(async (userIds) => {
    const grouped = groupBy(await repo.postsByUserIds(userIds), (p) => p.userId);
    return userIds.map((id) => grouped.get(id) ?? []);
  });
  const commentsByPostId = new DataLoader<number, Comment[]>(async (postIds) => {
    const grouped = groupBy(await repo.commentsByPostIds(postIds), (c) => c.postId);
    return postIds.map((id) => grouped.get(id) ?? []);
  });
  return {
    userById,
    postById,
    postsByUserId,
    commentsByPostId,
    /** Rows already loaded by a list query need no second trip when referenced again. */
    primeUsers(users: User[]) {
      for (const u of users) userById.prime(u.id, u);
    },
    primePosts(posts: Post[]) {
      for (const p of posts) postById.prime(p.id, p);
    },
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
