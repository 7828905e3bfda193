import { bearer, gql, startE2ESystem } from './helpers';

/**
 * The spec's statements, checked through the gateway's single port against the real processes
 * (gateway + content on the real Postgres, demo data seeded into a throwaway schema).
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let url: string;

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true });
  url = sys.url;
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

async function userIdByEmail(email: string): Promise<string> {
  // Emails are shown to admins (and to the user themself) only.
  const { body } = await gql(url, '{ users { id email } }', undefined, bearer('1', 'Admin', 'admin'));
  return body.data.users.find((u: { email: string }) => u.email === email).id;
}

describe('demonstration endpoints', () => {
  it('GET /hello answers the fixed greeting', async () => {
    const res = await fetch(`${url}/hello`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await res.json()).toEqual({ message: 'Halo Dunia!' });
  });

  it('POST /greet personalises the greeting', async () => {
    const res = await fetch(`${url}/greet`, json({ name: 'Budi' }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ message: 'Halo, Budi!' });
  });

  it.each([[{}], [{ name: '' }], [{ name: 42 }]])('POST /greet %j → 400 name is required', async (body) => {
    const res = await fetch(`${url}/greet`, json(body));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'name is required' });
  });
});

describe('related resources', () => {
  it('GET /users/:userId/posts lists the posts newest first', async () => {
    const alice = await userIdByEmail('alice@halo.local');
    const res = await fetch(`${url}/users/${alice}/posts`);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { user_id: number; created_at: string }[] };
    expect(data.length).toBeGreaterThanOrEqual(2);
    for (const p of data) expect(p.user_id).toBe(Number(alice));
    const times = data.map((p) => Date.parse(p.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('GET /posts/:id embeds the author (id, name, avatar) and comments with author_name', async () => {
    const alice = await userIdByEmail('alice@halo.local');
    const posts = (await (await fetch(`${url}/users/${alice}/posts`)).json()) as { data: { id: number }[] };
    const withComments = posts.data.at(-1)!;
    const res = await fetch(`${url}/posts/${withComments.id}`);
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: any };
    expect(data).toMatchObject({ id: withComments.id, user_id: Number(alice), title: expect.any(String) });
    expect(Object.keys(data.author).sort()).toEqual(['avatar', 'id', 'name']);
    expect(data.author).toMatchObject({ id: Number(alice), name: 'Alice' });
    expect(data.comments.length).toBeGreaterThan(0);
    for (const c of data.comments) {
      expect(c).toMatchObject({ post_id: withComments.id, user_id: expect.any(Number), author_name: expect.any(String) });
    }
  });

  it('GET /posts/:id/comments lists the comments oldest first', async () => {
    const first = (await (await fetch(`${url}/posts/2/comments`)).json()) as { data: { created_at: string }[] };
    const times = first.data.map((c) => Date.parse(c.created_at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('an unknown post is 404 Not found; a non-numeric id is 400 Invalid id', async () => {
    const missing = await fetch(`${url}/posts/999999`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'Not found' });
    const bad = await fetch(`${url}/posts/abc`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'Invalid id' });
  });
});

describe('gateway conventions', () => {
  it('unknown route → 404, wrong method → 405 with Allow', async () => {
    const unknown = await fetch(`${url}/nope`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'Not found' });
    const wrong = await fetch(`${url}/hello`, { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toContain('GET');
  });

  it('malformed JSON → 400 Invalid JSON; a body over 1 MiB → 413 Payload too large', async () => {
    const bad = await fetch(`${url}/greet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'Invalid JSON' });
    const big = await fetch(`${url}/greet`, json({ name: 'x'.repeat(1024 * 1024 + 10) }));
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: 'Payload too large' });
  });

  it('generates X-Request-Id when absent and keeps the caller’s one', async () => {
    const generated = await fetch(`${url}/hello`);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const kept = await fetch(`${url}/hello`, { headers: { 'x-request-id': 'e2e-trace-1' } });
    expect(kept.headers.get('x-request-id')).toBe('e2e-trace-1');
  });
});

describe('GraphQL through the gateway', () => {
  it('user(id) returns the selected fields', async () => {
    const alice = await userIdByEmail('alice@halo.local');
    const { status, body } = await gql(
      url,
      'query($id: ID!) { user(id: $id) { id name email } }',
      { id: alice },
      bearer(alice, 'Alice', 'user'),
    );
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    expect(body.data.user).toEqual({ id: alice, name: 'Alice', email: 'alice@halo.local' });
  });

  it('an unknown user is HTTP 200 with data.user null and code NOT_FOUND', async () => {
    const { status, body } = await gql(url, '{ user(id: "999999") { id name } }');
    expect(status).toBe(200);
    expect(body.data).toEqual({ user: null });
    expect(body.errors?.[0]).toMatchObject({ path: ['user'], extensions: { code: 'NOT_FOUND' } });
    expect(typeof body.errors?.[0].message).toBe('string');
  });

  it('nested users → posts → author resolves through the federated gateway', async () => {
    const { body } = await gql(url, '{ users { name posts { title author { name } } } }');
    expect(body.errors).toBeUndefined();
    const alice = body.data.users.find((u: { name: string }) => u.name === 'Alice');
    expect(alice.posts.length).toBeGreaterThan(0);
    for (const p of alice.posts) expect(p.author.name).toBe('Alice');
  });

  it('posts(first, after) pages with opaque cursors and no duplicates', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 20; page++) {
      const { body } = await gql(
        url,
        'query($after: String) { posts(first: 2, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }',
        { after },
      );
      expect(body.errors).toBeUndefined();
      const conn = body.data.posts;
      seen.push(...conn.edges.map((e: { node: { id: string } }) => e.node.id));
      if (!conn.pageInfo.hasNextPage) break;
      expect(conn.pageInfo.endCursor).not.toMatch(/^\d+$/);
      after = conn.pageInfo.endCursor;
    }
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('GET /graphql serves queries; a mutation over GET is refused with 405', async () => {
    const q = encodeURIComponent('{ users { name } }');
    const get = await fetch(`${url}/graphql?query=${q}`);
    expect(get.status).toBe(200);
    expect(((await get.json()) as any).data.users.length).toBeGreaterThanOrEqual(3);
    const m = encodeURIComponent('mutation { createUser(name: "X", email: "x@example.com") { id } }');
    expect((await fetch(`${url}/graphql?query=${m}`)).status).toBe(405);
  });

  it('batched requests return an array of responses in order', async () => {
    const res = await fetch(`${url}/graphql`, json([{ query: '{ users { name } }' }, { query: '{ user(id: "999999") { id } }' }]));
    expect(res.status).toBe(200);
    const out = (await res.json()) as any[];
    expect(out).toHaveLength(2);
    expect(out[0].data.users.length).toBeGreaterThan(0);
    expect(out[1].errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('createUser: anonymous → HTTP 401 at the gateway, a user → FORBIDDEN, an admin creates', async () => {
    const create = 'mutation { createUser(name: "Citra", email: "Citra@Example.com") { id name email } }';
    const anonymous = await gql(url, create);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors?.[0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
    const user = await gql(url, create, undefined, bearer('2', 'Alice', 'user'));
    expect(user.body.errors?.[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    const { body } = await gql(url, create, undefined, bearer('1', 'Admin', 'admin'));
    expect(body.errors).toBeUndefined();
    expect(body.data.createUser).toMatchObject({ name: 'Citra', email: 'citra@example.com' });
    const again = await gql(url, 'query($id: ID!) { user(id: $id) { name } }', { id: body.data.createUser.id });
    expect(again.body.data.user.name).toBe('Citra');
  });
});
