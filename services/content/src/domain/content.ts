import { conflict, normaliseEmail, notFound } from '@halo/kit';
import { embeddedAuthor, type Comment, type Post, type User } from './model';
import { connectionArgs, newUser, toConnection, type Cursor, type NewUser } from './rules';

/** What the domain needs from storage; `ContentStore` implements it over SQL. */
export interface ContentRepo {
  usersByIds(ids: readonly number[]): Promise<User[]>;
  userByEmail(email: string): Promise<User | null>;
  allUsers(): Promise<User[]>;
  insertUser(u: NewUser): Promise<User | null>;
  deleteUser(id: number): Promise<boolean>;
  postsByIds(ids: readonly number[]): Promise<Post[]>;
  postsByUserIds(userIds: readonly number[]): Promise<Post[]>;
  commentsByPostIds(postIds: readonly number[]): Promise<Comment[]>;
  postsPage(limit: number, after: Cursor | null): Promise<Post[]>;
}

/**
 * The content use cases, once, for every transport: REST routes, GraphQL resolvers and the gRPC
 * server all call these and only translate the results.
 */
export class Content {
  constructor(private readonly repo: ContentRepo) {}

  async user(id: number): Promise<User> {
    const [user] = await this.repo.usersByIds([id]);
    if (!user) throw notFound();
    return user;
  }

  async usersByIds(ids: readonly number[]): Promise<User[]> {
    const found = new Map((await this.repo.usersByIds(ids)).map((u) => [u.id, u]));
    return ids.flatMap((id) => found.get(id) ?? []);
  }

  async userByEmail(email: string): Promise<User> {
    const user = await this.repo.userByEmail(normaliseEmail(email));
    if (!user) throw notFound();
    return user;
  }

  users(): Promise<User[]> {
    return this.repo.allUsers();
  }

  async createUser(input: Parameters<typeof newUser>[0]): Promise<User> {
    const created = await this.repo.insertUser(newUser(input));
    if (!created) throw conflict('Email already registered');
    return created;
  }

  /** Removes a user (and, by cascade, their posts and comments); NOT_FOUND when unknown. */
  async deleteUser(id: number): Promise<void> {
    if (!(await this.repo.deleteUser(id))) throw notFound();
  }

  /** `GET /users/:userId/posts`: newest first; 404 for an unknown user. */
  async postsOfUser(userId: number): Promise<Post[]> {
    await this.user(userId);
    return this.repo.postsByUserIds([userId]);
  }

  async post(id: number): Promise<Post> {
    const [post] = await this.repo.postsByIds([id]);
    if (!post) throw notFound();
    return post;
  }

  /** `GET /posts/:id`: the post with its author and its comments (each with author_name). */
  async postDetail(id: number) {
    const post = await this.post(id);
    const comments = await this.repo.commentsByPostIds([id]);
    const people = await this.usersByIds([...new Set([post.userId, ...comments.map((c) => c.userId)])]);
    const byId = new Map(people.map((u) => [u.id, u]));
    const author = byId.get(post.userId);
    return {
      post,
      author: author ? embeddedAuthor(author) : null,
      comments: comments.map((c) => ({ comment: c, authorName: byId.get(c.userId)?.name ?? null })),
    };
  }

  /** `GET /posts/:id/comments`: oldest first; 404 for an unknown post. */
  async commentsOfPost(postId: number) {
    const detail = await this.postDetail(postId);
    return detail.comments;
  }

  /** `posts(first, after)` as a Relay connection over keyset pagination. */
  async postsConnection(args: { first?: number | null; after?: string | null }) {
    const { first, after } = connectionArgs(args);
    const rows = first === 0 ? [] : await this.repo.postsPage(first + 1, after);
    return toConnection(rows, first);
  }
}
