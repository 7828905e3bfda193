import { at, gql, insertComments, insertPosts, insertUsers, startTestContent, type TestContent } from './helpers';

/**
 * The N+1 proof: the number of SQL statements a GraphQL request sends is a constant of the query's
 * shape, not of the rows it touches. Each query is measured on a small dataset, then again after a
 * much larger one is added to the same schema, and must cost exactly the same both times.
 *
 * `db.stats.queries` counts every statement the Db sends. The service shares this file's Db, and
 * nothing else runs against it between the two reads (tests in a file run one at a time, and
 * /readyz is never called here), so the difference is the request's own statements.
 */

let t: TestContent;

interface Dataset {
  authors: number;
  postsPerAuthor: number;
  commentsPerPost: number;
  /** Users who only comment: their rows are never loaded as post authors, so comment authors cost a real lookup. */
  commenters: number;
}

const SMALL: Dataset = { authors: 2, postsPerAuthor: 2, commentsPerPost: 2, commenters: 2 };
const LARGE: Dataset = { authors: 20, postsPerAuthor: 5, commentsPerPost: 3, commenters: 30 };

const totals = { users: 0, posts: 0, comments: 0 };

/** Adds a dataset in bulk (one INSERT per table), with created_at values after everything already there. */
async function addDataset(tag: string, d: Dataset, startMinute: number): Promise<void> {
  const authors = await insertUsers(
    t.db,
    Array.from({ length: d.authors }, (_, i) => ({ name: `${tag} author ${i}`, email: `${tag}-author-${i}@example.com` })),
  );
  const commenters = await insertUsers(
    t.db,
    Array.from({ length: d.commenters }, (_, i) => ({ name: `${tag} commenter ${i}`, email: `${tag}-commenter-${i}@example.com` })),
  );
  const posts = await insertPosts(
    t.db,
    authors.flatMap((a, i) =>
      Array.from({ length: d.postsPerAuthor }, (_, j) => ({
        userId: a.id,
        title: `${tag} post ${i}.${j}`,
        createdAt: at(startMinute + j * d.authors + i),
      })),
    ),
  );
  let n = 0;
  const inserted = await insertComments(
    t.db,
    posts.flatMap((p, i) =>
      Array.from({ length: d.commentsPerPost }, (_, k) => ({
        postId: p.id,
        userId: commenters[n++ % commenters.length]!.id,
        body: `${tag} comment ${i}.${k}`,
        createdAt: at(startMinute + 10_000 + i * d.commentsPerPost + k),
      })),
    ),
  );
  totals.users += authors.length + commenters.length;
  totals.posts += posts.length;
  totals.comments += inserted;
}

/** Runs one operation and answers the statements it cost, failing on any GraphQL error. */
async function measure(query: string, variables?: Record<string, unknown>) {
  const before = t.db.stats.queries;
  const { status, body } = await gql(t.base, query, variables);
  const statements = t.db.stats.queries - before;
  expect(status).toBe(200);
  expect(body.errors).toBeUndefined();
  return { statements, data: body.data! };
}

const NESTED_USERS = `{ users { name posts { title author { name } comments { body author { name } } } } }`;
const CONNECTION = `{ posts(first: 50) { edges { node { title author { name } comments { body author { name } } } } } }`;
const ENTITIES = `query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on User { id name } } }`;
/** Ids 1–50: on the small dataset most are unknown (null), on the large one all exist. */
const FIFTY_USERS = Array.from({ length: 50 }, (_, i) => ({ __typename: 'User', id: String(i + 1) }));

/**
 * Expected statements per request, worked out from src/graphql/loaders.ts and resolvers.ts:
 *
 * NESTED_USERS = 3
 *   1. `users`                → content.users(): SELECT … FROM users (and primes userById with every user)
 *   2. `User.posts`           → postsByUserId: ONE `user_id = ANY($1)` for all users
 *   3. `Post.comments`        → commentsByPostId: ONE `post_id = ANY($1)` for all posts
 *   `Post.author` and `Comment.author` hit userById, already primed by step 1 → 0 statements.
 *   (Naively, without loaders: 1 + users + 2 × posts + comments statements.)
 *
 * CONNECTION = 4
 *   1. `posts(first: 50)`     → postsPage: one keyset SELECT (LIMIT 51)
 *   2. `Post.author`          → userById: ONE `id = ANY($1)` for every author on the page
 *   3. `Post.comments`        → commentsByPostId: ONE statement for all 50 posts
 *   4. `Comment.author`       → userById again, in a later tick: ONE statement for the commenters
 *      not already cached. The datasets make commenters distinct from authors, so this batch always
 *      happens; were every commenter also an author on the page, the DataLoader cache would make it 3.
 *
 * ENTITIES (50 User representations) = 1
 *   `User.__resolveReference` → userById: ONE `id = ANY($1)` for all 50 ids.
 */
const EXPECTED = { nestedUsers: 3, connection: 4, entities: 1 } as const;
type Case = keyof typeof EXPECTED;
const measured: Record<'small' | 'large', Partial<Record<Case, number>>> = { small: {}, large: {} };

beforeAll(async () => {
  t = await startTestContent();
});

afterAll(async () => {
  await t?.close();
});

describe.each([
  ['small', SMALL, 0],
  ['large', LARGE, 100_000],
] as const)('on the %s dataset (cumulative)', (size, dataset, startMinute) => {
  beforeAll(async () => {
    await addDataset(size, dataset, startMinute);
  });

  it('users { posts { author comments { author } } } costs a constant number of statements', async () => {
    const { statements, data } = await measure(NESTED_USERS);
    // The response really covers every row now in the schema.
    const users = data.users as { posts: { comments: unknown[] }[] }[];
    expect(users).toHaveLength(totals.users);
    expect(users.flatMap((u) => u.posts)).toHaveLength(totals.posts);
    expect(users.flatMap((u) => u.posts).flatMap((p) => p.comments)).toHaveLength(totals.comments);
    measured[size].nestedUsers = statements;
    expect(statements).toBe(EXPECTED.nestedUsers);
  });

  it('loaders are per request: the same query costs the same again (no cross-request cache)', async () => {
    expect((await measure(NESTED_USERS)).statements).toBe(EXPECTED.nestedUsers);
  });

  it('posts(first: 50) { node { author comments { author } } } costs a constant number of statements', async () => {
    const { statements, data } = await measure(CONNECTION);
    const edges = data.posts.edges as { node: { author: { name: string }; comments: { author: { name: string } }[] } }[];
    expect(edges).toHaveLength(Math.min(50, totals.posts));
    expect(edges.every((e) => e.node.comments.length === dataset.commentsPerPost)).toBe(true);
    expect(edges.every((e) => e.node.comments.every((c) => c.author.name.includes('commenter')))).toBe(true);
    measured[size].connection = statements;
    expect(statements).toBe(EXPECTED.connection);
  });

  it('_entities with 50 User representations is one statement', async () => {
    const { statements, data } = await measure(ENTITIES, { reps: FIFTY_USERS });
    const entities = data._entities as ({ id: string } | null)[];
    expect(entities).toHaveLength(50);
    expect(entities.filter((e) => e !== null)).toHaveLength(Math.min(50, totals.users));
    entities.forEach((e, i) => e && expect(e.id).toBe(String(i + 1)));
    measured[size].entities = statements;
    expect(statements).toBe(EXPECTED.entities);
  });
});

describe('summary', () => {
  it('the cost did not grow with 13× the users, 26× the posts and 38× the comments', () => {
    expect(totals).toEqual({ users: 4 + 50, posts: 4 + 100, comments: 8 + 300 });
    expect(measured.large).toEqual(measured.small);
    expect(measured.small).toEqual(EXPECTED);
  });
});
