import { requireAdmin, type Caller } from '@halo/kit/auth';
import { alignById, groupByKey, keysetConnection, normaliseEmail, type ConnectionArgs } from '@halo/kit/domain';
import { conflict, found, notFound } from '@halo/kit/errors';
import { embeddedAuthor, type Comment, type Post, type User } from './model';
import { newUser, POST_CURSOR, visibleEmail, type NewUser, type PostPosition } from './rules';

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
  postsPage(limit: number, after: PostPosition | null): Promise<Post[]>;
}

type NewUserInput = Parameters<typeof newUser>[0];

/**
 * The content use cases, once, for every transport: REST routes, GraphQL resolvers (through their
 * DataLoaders, which call the batch methods) and the gRPC server all call these and only translate
 * the results. Not-found and authorisation are decided here.
 */
export class Content {
  constructor(private readonly repo: ContentRepo) {}

  // ── Batch reads: one statement for any number of keys, answered in key order ──

  /** Users by id, null where unknown. */
  async lookUpUsers(ids: readonly number[]): Promise<(User | null)[]> {
    return alignById(ids, await this.repo.usersByIds(ids));
  }

  /** Posts by id, null where unknown. */
  async lookUpPosts(ids: readonly number[]): Promise<(Post | null)[]> {
    return alignById(ids, await this.repo.postsByIds(ids));
  }

  /** Each user's posts, newest first. */
  async postsOfUsers(userIds: readonly number[]): Promise<Post[][]> {
    return groupByKey(userIds, await this.repo.postsByUserIds(userIds), (p) => p.userId);
  }

  /** Each post's comments, oldest first. */
  async commentsOfPosts(postIds: readonly number[]): Promise<Comment[][]> {
    return groupByKey(postIds, await this.repo.commentsByPostIds(postIds), (c) => c.postId);
  }

  // ── Use cases ──

  async user(id: number): Promise<User> {
    return found((await this.lookUpUsers([id]))[0]);
  }

  /** The users that exist, in the order asked; unknown ids are left out. */
  async usersByIds(ids: readonly number[]): Promise<User[]> {
    return (await this.lookUpUsers(ids)).filter((u): u is User => u !== null);
  }

  async userByEmail(email: string): Promise<User> {
    return found(await this.repo.userByEmail(normaliseEmail(email)));
  }

  users(): Promise<User[]> {
    return this.repo.allUsers();
  }

  /** A user's email as `caller` may read it: their own or, for admins, anyone's; otherwise "". */
  emailOf(caller: Caller | null, user: User): string {
    return visibleEmail(caller, user);
  }

  /** An admin creates a user. Order of checks: who (401/403), then what (400), then the email's uniqueness (409). */
  async createUser(caller: Caller | null, input: NewUserInput): Promise<User> {
    // An API key also needs users:write: declared on the mutation, held to by the kit.
    requireAdmin(caller);
    return this.registerUser(input);
  }

  /**
   * A user signs up through auth (registration, first OAuth login). Over gRPC only: the caller
   * is a service, not a person, so there is no user to authorise.
   */
  async registerUser(input: NewUserInput): Promise<User> {
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
    const [posts] = await this.postsOfUsers([userId]);
    return posts!;
  }

  async post(id: number): Promise<Post> {
    return found((await this.lookUpPosts([id]))[0]);
  }

  /** `GET /posts/:id`: the post with its author and its comments (each with author_name). */
  async postDetail(id: number) {
    const post = await this.post(id);
    const [comments = []] = await this.commentsOfPosts([id]);
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

  /** `posts(first, after)`: all posts newest first, as a Relay connection over keyset pagination. */
  postsConnection(args: ConnectionArgs) {
    return keysetConnection(POST_CURSOR, args, (limit, after) => this.repo.postsPage(limit, after));
  }
}
