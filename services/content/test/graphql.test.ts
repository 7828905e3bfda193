import {
  at,
  gql,
  insertComments,
  insertPosts,
  insertUsers,
  startTestContent,
  type InsertedPost,
  type InsertedUser,
  type TestContent,
  bearer,
  bearerFor,
} from './helpers';

let t: TestContent;
let users: InsertedUser[];
let posts: InsertedPost[];
/** All posts in the order the connection must return them: created_at desc, then id desc. */
let expectedOrder: number[];

const POST_COUNT = 25;

beforeAll(async () => {
  t = await startTestContent();
  users = await insertUsers(t.db, [
    { name: 'Ana', email: 'ana@example.com', avatar: 'https://img.example.com/ana.png' },
    { name: 'Ben', email: 'ben@example.com', role: 'admin' },
    { name: 'Cy', email: 'cy@example.com' },
  ]);
  // 25 posts whose timestamps come in groups of three EQUAL values (so pages of 4 cut through ties and
  // only the id tie-break keeps pages disjoint), inserted in a shuffled order so id order and time
  // order disagree.
  const specs = Array.from({ length: POST_COUNT }, (_, i) => ({
    userId: users[i % 3]!.id,
    title: `Post ${String(i).padStart(2, '0')}`,
    body: `body ${i}`,
    createdAt: at(Math.floor(i / 3) * 10),
  }));
  const shuffled = specs
    .map((s, i) => ({ s, k: (i * 7) % POST_COUNT }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.s);
  posts = await insertPosts(t.db, shuffled);
  expectedOrder = [...posts]
    .sort((a, b) => (a.createdAt === b.createdAt ? b.id - a.id : a.createdAt < b.createdAt ? 1 : -1))
    .map((p) => p.id);

  // Comments on Ana's newest post, out of time order, by different people.
  const anasPosts = posts
    .filter((p) => p.userId === users[0]!.id)
    .sort((a, b) => expectedOrder.indexOf(a.id) - expectedOrder.indexOf(b.id));
  await insertComments(t.db, [
    { postId: anasPosts[0]!.id, userId: users[2]!.id, body: 'later', createdAt: at(500) },
    { postId: anasPosts[0]!.id, userId: users[1]!.id, body: 'earlier', createdAt: at(400) },
  ]);
});

afterAll(async () => {
  await t?.close();
});

describe('Query.user / Query.users', () => {
  it('user(id) returns the user’s fields', async () => {
    const ana = users[0]!;
    const { status, body } = await gql(
      t.base,
      `query ($id: ID!) { user(id: $id) { id name email avatar role createdAt } }`,
      { id: String(ana.id) },
      bearerFor(ana.id),
    );
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(body.data!.user).toEqual({
      id: String(ana.id),
      name: 'Ana',
      email: 'ana@example.com',
      avatar: 'https://img.example.com/ana.png',
      role: 'user',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
  });

  it('an unknown id → HTTP 200, data.user null and NOT_FOUND', async () => {
    const { status, body } = await gql(t.base, `{ user(id: "999999") { id name } }`);
    expect(status).toBe(200);
    expect(body.data).toEqual({ user: null });
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]).toMatchObject({ message: 'Not found', path: ['user'], extensions: { code: 'NOT_FOUND' } });
  });

  it('a non-numeric id → BAD_USER_INPUT Invalid id, not an internal error', async () => {
    const { status, body } = await gql(t.base, `{ user(id: "1 OR 1=1") { id } }`);
    expect(status).toBe(200);
    expect(body.data).toEqual({ user: null });
    expect(body.errors![0]).toMatchObject({ message: 'Invalid id', extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('users lists every user by id', async () => {
    const { body } = await gql(t.base, `{ users { id name role } }`);
    expect(body.errors).toBeUndefined();
    expect(body.data!.users).toEqual([
      { id: String(users[0]!.id), name: 'Ana', role: 'user' },
      { id: String(users[1]!.id), name: 'Ben', role: 'admin' },
      { id: String(users[2]!.id), name: 'Cy', role: 'user' },
    ]);
  });

  it('resolves users { posts { author comments { author } } } correctly', async () => {
    const { body } = await gql(
      t.base,
      `{ users { id name posts { id title createdAt author { id name } comments { body createdAt author { name } } } } }`,
    );
    expect(body.errors).toBeUndefined();
    const got = body.data!.users as {
      id: string;
      name: string;
      posts: {
        id: string;
        title: string;
        createdAt: string;
        author: { id: string; name: string };
        comments: { body: string; author: { name: string } }[];
      }[];
    }[];
    for (const u of got) {
      const mine = expectedOrder.filter((id) => posts.find((p) => p.id === id)!.userId === Number(u.id));
      // Each user's posts, newest first, all authored by that user.
      expect(u.posts.map((p) => Number(p.id))).toEqual(mine);
      for (const p of u.posts) expect(p.author).toEqual({ id: u.id, name: u.name });
    }
    const ana = got.find((u) => u.name === 'Ana')!;
    expect(ana.posts[0]!.comments).toEqual([
      { body: 'earlier', createdAt: at(400), author: { name: 'Ben' } },
      { body: 'later', createdAt: at(500), author: { name: 'Cy' } },
    ]);
    expect(ana.posts.slice(1).every((p) => p.comments.length === 0)).toBe(true);
  });
});

describe('Query.posts connection', () => {
  const PAGE = `query ($first: Int, $after: String) {
    posts(first: $first, after: $after) { edges { cursor node { id title createdAt } } pageInfo { hasNextPage endCursor } }
  }`;
  interface Page {
    edges: { cursor: string; node: { id: string; title: string; createdAt: string } }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  }
  const page = async (variables: Record<string, unknown>) => {
    const { status, body } = await gql<{ posts: Page }>(t.base, PAGE, variables);
    expect(status).toBe(200);
    return body;
  };

  it('defaults to 10 posts, newest first', async () => {
    const body = await page({});
    expect(body.errors).toBeUndefined();
    const conn = body.data!.posts;
    expect(conn.edges.map((e) => Number(e.node.id))).toEqual(expectedOrder.slice(0, 10));
    expect(conn.pageInfo.hasNextPage).toBe(true);
    expect(conn.pageInfo.endCursor).toBe(conn.edges[9]!.cursor);
  });

  it.each([1, 4, 7, 25, 100])('pages through all posts with first=%i, without duplicates or gaps', async (first) => {
    const seen: number[] = [];
    let after: string | null = null;
    for (let i = 0; i < POST_COUNT + 2; i++) {
      const body = await page({ first, after });
      expect(body.errors).toBeUndefined();
      const conn = body.data!.posts;
      seen.push(...conn.edges.map((e) => Number(e.node.id)));
      expect(conn.edges.length).toBeLessThanOrEqual(first);
      expect(conn.pageInfo.endCursor).toBe(conn.edges.at(-1)?.cursor ?? null);
      if (!conn.pageInfo.hasNextPage) break;
      expect(conn.edges).toHaveLength(first);
      after = conn.pageInfo.endCursor;
    }
    expect(seen).toEqual(expectedOrder);
    expect(new Set(seen).size).toBe(POST_COUNT);
  });

  it('orders equal timestamps by id, newest id first', async () => {
    const { data } = await page({ first: 100 });
    const nodes = data!.posts.edges.map((e) => e.node);
    for (let i = 1; i < nodes.length; i++) {
      const [prev, cur] = [nodes[i - 1]!, nodes[i]!];
      expect(prev.createdAt >= cur.createdAt).toBe(true);
      if (prev.createdAt === cur.createdAt) expect(Number(prev.id)).toBeGreaterThan(Number(cur.id));
    }
    // There really are ties in the data.
    expect(new Set(nodes.map((n) => n.createdAt)).size).toBeLessThan(nodes.length);
  });

  it('cursors are opaque: not a bare number and not the raw timestamp', async () => {
    const { data } = await page({ first: 3 });
    for (const e of data!.posts.edges) {
      expect(e.cursor).not.toMatch(/^\d+$/);
      expect(e.cursor).not.toContain(e.node.createdAt);
      expect(e.cursor).not.toContain(e.node.id + '|');
    }
  });

  it('first: 0 → no edges and no endCursor', async () => {
    const body = await page({ first: 0 });
    expect(body.errors).toBeUndefined();
    expect(body.data!.posts.edges).toEqual([]);
    expect(body.data!.posts.pageInfo.endCursor).toBeNull();
  });

  it.each([101, -1, 1000])('first: %i → BAD_USER_INPUT', async (first) => {
    const body = await page({ first });
    expect(body.data).toBeNull();
    expect(body.errors![0]).toMatchObject({ message: 'first must be between 0 and 100', extensions: { code: 'BAD_USER_INPUT' } });
  });

  it.each([
    ['garbage', 'garbage!!'],
    ['a bare number', '10'],
    ['a raw timestamp', '2025-06-01T12:00:00.000Z'],
    ['a prefix without an id', Buffer.from('post:2025-06-01T12:00:00.000Z').toString('base64url')],
    // These decode to a date that Date.parse accepts but Postgres does not: must not reach SQL.
    ['a forged, non-ISO date', Buffer.from('post:1|1').toString('base64url')],
    ['a forged, impossible date', Buffer.from('post:2026-02-30T00:00:00.000Z|1').toString('base64url')],
  ])('after: %s → BAD_USER_INPUT Invalid cursor', async (_, after) => {
    const body = await page({ first: 5, after });
    expect(body.data).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors![0]).toMatchObject({ message: 'Invalid cursor', extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('resolves each node’s author and comments', async () => {
    const { body } = await gql(t.base, `{ posts(first: 100) { edges { node { id author { id name } comments { body } } } } }`);
    expect(body.errors).toBeUndefined();
    for (const { node } of body.data!.posts.edges as { node: { id: string; author: { id: string; name: string } } }[]) {
      const p = posts.find((x) => x.id === Number(node.id))!;
      expect(node.author.id).toBe(String(p.userId));
    }
  });
});

describe('Mutation.createUser', () => {
  const CREATE = `mutation ($name: String!, $email: String!) { createUser(name: $name, email: $email) { id name email role avatar } }`;
  const ADMIN = bearer('admin');

  it('without a token → UNAUTHENTICATED, nothing created', async () => {
    const { status, body } = await gql(t.base, CREATE, { name: 'Anon', email: 'anon@example.com' });
    expect(status).toBe(200);
    expect(body.errors![0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
    expect((await t.db.query('SELECT 1 FROM users WHERE email = $1', ['anon@example.com'])).rows).toHaveLength(0);
  });

  it('a non-admin token → FORBIDDEN; an invalid token → HTTP 401 before execution', async () => {
    const user = await gql(t.base, CREATE, { name: 'Usr', email: 'usr@example.com' }, bearer('user'));
    expect(user.body.errors![0]).toMatchObject({ message: 'Forbidden', extensions: { code: 'FORBIDDEN' } });
    const invalid = await gql(t.base, CREATE, { name: 'Bad', email: 'bad@example.com' }, { authorization: 'Bearer not.a.jwt' });
    expect(invalid.status).toBe(401);
    expect(invalid.body.errors![0]).toMatchObject({ message: 'Invalid token', extensions: { code: 'UNAUTHENTICATED' } });
    expect((await t.db.query('SELECT 1 FROM users WHERE email = ANY($1)', [['usr@example.com', 'bad@example.com']])).rows).toHaveLength(0);
  });

  it('an admin API key needs the users:write scope', async () => {
    const denied = await gql(
      t.base,
      CREATE,
      { name: 'Key', email: 'key1@example.com' },
      bearer('admin', { scope: 'profile:read', akid: '7' }),
    );
    expect(denied.body.errors![0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    const allowed = await gql(
      t.base,
      CREATE,
      { name: 'Key', email: 'key2@example.com' },
      bearer('admin', { scope: 'users:write', akid: '7' }),
    );
    expect(allowed.body.errors).toBeUndefined();
  });

  it('creates a user with a lower-cased email', async () => {
    const { status, body } = await gql(t.base, CREATE, { name: '  Dewi  ', email: ' Dewi.Lestari@Example.COM ' }, ADMIN);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const created = body.data!.createUser as { id: string };
    expect(created).toEqual({
      id: expect.stringMatching(/^\d+$/),
      name: 'Dewi',
      email: 'dewi.lestari@example.com',
      role: 'user',
      avatar: null,
    });
    const again = await gql(t.base, `query ($id: ID!) { user(id: $id) { email } }`, { id: created.id }, ADMIN);
    expect(again.body.data!.user).toEqual({ email: 'dewi.lestari@example.com' });
  });

  it('a duplicate email (in any case) → CONFLICT Email already registered', async () => {
    const { status, body } = await gql(t.base, CREATE, { name: 'Other Ana', email: 'ANA@example.com' }, ADMIN);
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors![0]).toMatchObject({ message: 'Email already registered', extensions: { code: 'CONFLICT' } });
  });

  it.each([
    ['not-an-email', 'email is invalid'],
    ['a@b', 'email is invalid'],
    ['two words@example.com', 'email is invalid'],
    ['', 'email is required'],
  ])('an invalid email %j → BAD_USER_INPUT', async (email, message) => {
    const { body } = await gql(t.base, CREATE, { name: 'Eko', email }, ADMIN);
    expect(body.data).toBeNull();
    expect(body.errors![0]).toMatchObject({ message, extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('a blank name → BAD_USER_INPUT name is required', async () => {
    const { body } = await gql(t.base, CREATE, { name: '   ', email: 'blank@example.com' }, ADMIN);
    expect(body.errors![0]).toMatchObject({ message: 'name is required', extensions: { code: 'BAD_USER_INPUT' } });
  });
});

describe('federation', () => {
  it('_service { sdl } publishes the subgraph schema', async () => {
    const { body } = await gql(t.base, `{ _service { sdl } }`);
    expect(body.errors).toBeUndefined();
    const sdl = (body.data!._service as { sdl: string }).sdl;
    expect(sdl).toMatch(/type User\s+@key\(fields: "id"\)/);
    expect(sdl).toMatch(/type Post\s+@key\(fields: "id"\)/);
    expect(sdl).toContain('@link(url: "https://specs.apollo.dev/federation/v2.9"');
    expect(sdl).toContain('posts(first: Int, after: String): PostConnection!');
  });

  it('_entities resolves User and Post references (and null for an unknown one)', async () => {
    const post = posts[0]!;
    const { body } = await gql(
      t.base,
      `query ($reps: [_Any!]!) {
        _entities(representations: $reps) {
          __typename
          ... on User { id name email }
          ... on Post { id title author { name } }
        }
      }`,
      {
        reps: [
          { __typename: 'User', id: '1' },
          { __typename: 'Post', id: String(post.id) },
          { __typename: 'User', id: '999999' },
        ],
      },
    );
    expect(body.errors).toBeUndefined();
    const author = users.find((u) => u.id === post.userId)!;
    const first = users.find((u) => u.id === 1)!; // a fresh schema numbers users from 1
    expect(body.data!._entities).toEqual([
      // Asked anonymously: the email is hidden on this path too (see 'User.email' below).
      { __typename: 'User', id: '1', name: first.name, email: '' },
      { __typename: 'Post', id: String(post.id), title: post.title, author: { name: author.name } },
      null,
    ]);
  });
});

describe('User.email: shown to the user themself and to admins, "" to everyone else, on every path', () => {
  type Seen = Map<number, string>;
  /** Every (user id → email) an operation revealed, with these headers. */
  async function seen(headers: Record<string, string>): Promise<Seen[]> {
    const withHeaders = async (query: string, variables?: Record<string, unknown>) => {
      const { body } = await gql(t.base, query, variables, headers);
      expect(body.errors).toBeUndefined();
      return JSON.stringify(body.data);
    };
    const texts = [
      await withHeaders('query ($id: ID!) { user(id: $id) { id email } }', { id: String(users[0]!.id) }),
      await withHeaders('{ users { id email } }'),
      await withHeaders('{ posts(first: 100) { edges { node { author { id email } comments { author { id email } } } } } }'),
      await withHeaders('query ($r: [_Any!]!) { _entities(representations: $r) { ... on User { id email } } }', {
        r: users.map((u) => ({ __typename: 'User', id: String(u.id) })),
      }),
    ];
    return texts.map((text) => {
      const found = new Map<number, string>();
      for (const m of text.matchAll(/\{"id":"(\d+)","email":"([^"]*)"\}/g)) found.set(Number(m[1]), m[2]!);
      return found;
    });
  }

  it('anonymous callers read "" for everyone, on user, users, nested authors and _entities', async () => {
    for (const path of await seen({})) {
      expect(path.size).toBeGreaterThan(0);
      for (const email of path.values()) expect(email).toBe('');
    }
  });

  it('a user reads their own email and "" for everyone else', async () => {
    const ana = users[0]!;
    for (const path of await seen(bearerFor(ana.id))) {
      // Every path shows Ana (user(id) asks for her; the others list or reach everyone).
      expect(path.get(ana.id)).toBe(ana.email);
      for (const [id, email] of path) expect(email).toBe(id === ana.id ? ana.email : '');
    }
  });

  it('an admin reads every email', async () => {
    const { rows } = await t.db.query<{ id: number; email: string }>('SELECT id::int AS id, email FROM users');
    const stored = new Map(rows.map((r) => [r.id, r.email]));
    for (const path of await seen(bearerFor(users[1]!.id, 'admin'))) {
      expect(path.size).toBeGreaterThan(0);
      for (const [id, email] of path) expect(email).toBe(stored.get(id));
    }
  });
});
