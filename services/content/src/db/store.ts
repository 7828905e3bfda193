import type { Db, Queryable } from '@halo/kit/db';
import type { Comment, Post, User } from '../domain/model';
import type { NewUser, PostPosition } from '../domain/rules';

interface UserRow {
  id: number;
  name: string;
  email: string;
  avatar: string | null;
  role: 'user' | 'admin';
  created_at: Date;
}
interface PostRow {
  id: number;
  user_id: number;
  title: string;
  body: string;
  created_at: Date;
}
interface CommentRow {
  id: number;
  post_id: number;
  user_id: number;
  body: string;
  created_at: Date;
}

const USER_COLS = 'id, name, email, avatar, role, created_at';
const POST_COLS = 'id, user_id, title, body, created_at';
const COMMENT_COLS = 'id, post_id, user_id, body, created_at';

const toUser = (r: UserRow): User => ({
  id: r.id,
  name: r.name,
  email: r.email,
  avatar: r.avatar,
  role: r.role,
  createdAt: r.created_at.toISOString(),
});
const toPost = (r: PostRow): Post => ({
  id: r.id,
  userId: r.user_id,
  title: r.title,
  body: r.body,
  createdAt: r.created_at.toISOString(),
});
const toComment = (r: CommentRow): Comment => ({
  id: r.id,
  postId: r.post_id,
  userId: r.user_id,
  body: r.body,
  createdAt: r.created_at.toISOString(),
});

/**
 * Every SQL statement of the content service. Batch methods take many ids and answer in one
 * statement (`= ANY($1)`), which is what the DataLoaders build on.
 */
export class ContentStore {
  constructor(private readonly db: Db) {}

  async usersByIds(ids: readonly number[]): Promise<User[]> {
    const { rows } = await this.db.query<UserRow>(`SELECT ${USER_COLS} FROM users WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(toUser);
  }

  async userByEmail(email: string, tx: Queryable = this.db): Promise<User | null> {
    const { rows } = await tx.query<UserRow>(`SELECT ${USER_COLS} FROM users WHERE email = $1`, [email]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async allUsers(limit = 1000): Promise<User[]> {
    const { rows } = await this.db.query<UserRow>(`SELECT ${USER_COLS} FROM users ORDER BY id LIMIT $1`, [limit]);
    return rows.map(toUser);
  }

  /** Inserts a user; null when the email is taken (no exception path for a normal conflict). */
  async insertUser(u: NewUser, tx: Queryable = this.db): Promise<User | null> {
    const { rows } = await tx.query<UserRow>(
      `INSERT INTO users (name, email, avatar, role) VALUES ($1, $2, $3, $4)
       ON CONFLICT (email) DO NOTHING RETURNING ${USER_COLS}`,
      [u.name, u.email, u.avatar, u.role],
    );
    return rows[0] ? toUser(rows[0]) : null;
  }

  async deleteUser(id: number): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM users WHERE id = $1', [id]);
    return rowCount > 0;
  }

  async postsByIds(ids: readonly number[]): Promise<Post[]> {
    const { rows } = await this.db.query<PostRow>(`SELECT ${POST_COLS} FROM posts WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(toPost);
  }

  /** Posts of many users at once, each user's newest first. */
  async postsByUserIds(userIds: readonly number[]): Promise<Post[]> {
    const { rows } = await this.db.query<PostRow>(
      `SELECT ${POST_COLS} FROM posts WHERE user_id = ANY($1::bigint[]) ORDER BY created_at DESC, id DESC`,
      [userIds],
    );
    return rows.map(toPost);
  }

  /** Comments of many posts at once, each post's oldest first. */
  async commentsByPostIds(postIds: readonly number[]): Promise<Comment[]> {
    const { rows } = await this.db.query<CommentRow>(
      `SELECT ${COMMENT_COLS} FROM comments WHERE post_id = ANY($1::bigint[]) ORDER BY created_at, id`,
      [postIds],
    );
    return rows.map(toComment);
  }

  /** Keyset page of all posts, newest first: `limit` rows strictly after `after`. */
  async postsPage(limit: number, after: PostPosition | null): Promise<Post[]> {
    const { rows } = after
      ? await this.db.query<PostRow>(
          `SELECT ${POST_COLS} FROM posts WHERE (created_at, id) < ($1::timestamptz, $2::bigint)
           ORDER BY created_at DESC, id DESC LIMIT $3`,
          [after.createdAt, after.id, limit],
        )
      : await this.db.query<PostRow>(`SELECT ${POST_COLS} FROM posts ORDER BY created_at DESC, id DESC LIMIT $1`, [limit]);
    return rows.map(toPost);
  }

  async hasPosts(tx: Queryable, userId: number): Promise<boolean> {
    const { rows } = await tx.query('SELECT 1 FROM posts WHERE user_id = $1 LIMIT 1', [userId]);
    return rows.length > 0;
  }

  async insertPost(tx: Queryable, p: { userId: number; title: string; body: string; createdAt?: string }): Promise<Post> {
    const { rows } = await tx.query<PostRow>(
      `INSERT INTO posts (user_id, title, body, created_at) VALUES ($1, $2, $3, COALESCE($4::timestamptz, now()))
       RETURNING ${POST_COLS}`,
      [p.userId, p.title, p.body, p.createdAt ?? null],
    );
    return toPost(rows[0]!);
  }

  async insertComment(tx: Queryable, c: { postId: number; userId: number; body: string; createdAt?: string }): Promise<Comment> {
    const { rows } = await tx.query<CommentRow>(
      `INSERT INTO comments (post_id, user_id, body, created_at) VALUES ($1, $2, $3, COALESCE($4::timestamptz, now()))
       RETURNING ${COMMENT_COLS}`,
      [c.postId, c.userId, c.body, c.createdAt ?? null],
    );
    return toComment(rows[0]!);
  }
}
