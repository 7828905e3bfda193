import DataLoader from 'dataloader';
import type { Content } from '../domain/content';
import type { Comment, Post, User } from '../domain/model';

/**
 * Per-request batching over the domain's batch methods: every `author`, `posts`, `comments` and
 * entity reference of one GraphQL request collapses into one SQL statement per kind, however many
 * rows are involved.
 */
export function createLoaders(content: Content) {
  const userById = new DataLoader<number, User | null>((ids) => content.lookUpUsers(ids));
  const postById = new DataLoader<number, Post | null>((ids) => content.lookUpPosts(ids));
  const postsByUserId = new DataLoader<number, Post[]>((userIds) => content.postsOfUsers(userIds));
  const commentsByPostId = new DataLoader<number, Comment[]>((postIds) => content.commentsOfPosts(postIds));
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
