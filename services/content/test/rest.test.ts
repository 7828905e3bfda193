import {
  at,
  insertComments,
  insertPosts,
  insertUsers,
  startTestContent,
  type InsertedPost,
  type InsertedUser,
  type TestContent,
} from './helpers';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let t: TestContent;
let alice: InsertedUser;
let bob: InsertedUser;
let carol: InsertedUser;
/** Alice's posts, inserted so that id order and time order disagree. */
let middle: InsertedPost;
let oldest: InsertedPost;
let newest: InsertedPost;

async function call(method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${t.base}${path}`, { method, headers: init.headers, body: init.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as Record<string, any>) : undefined }; // any: bodies are asserted per test
}
const get = (path: string, headers?: Record<string, string>) => call('GET', path, headers ? { headers } : {});
const postJson = (path: string, body: unknown) =>
  call('POST', path, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** An error answer is exactly `{error}`: no stack, no SQL, nothing else. */
function expectError(res: { status: number; body?: Record<string, unknown>; text: string }, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ error });
  expect(res.text).not.toMatch(/stack|SELECT|at \w+ \(/i);
}

beforeAll(async () => {
  t = await startTestContent();
  [alice, bob, carol] = (await insertUsers(t.db, [
    { name: 'Alice', email: 'alice@example.com', avatar: 'https://img.example.com/alice.png' },
    { name: 'Bob', email: 'bob@example.com' },
    { name: 'Carol', email: 'carol@example.com' },
  ])) as [InsertedUser, InsertedUser, InsertedUser];
  [middle, oldest, newest] = (await insertPosts(t.db, [
    { userId: alice.id, title: 'Middle', body: 'second by time, first by id', createdAt: at(10) },
    { userId: alice.id, title: 'Oldest', body: 'first by time', createdAt: at(0) },
    { userId: alice.id, title: 'Newest', body: 'last by time', createdAt: at(20) },
  ])) as [InsertedPost, InsertedPost, InsertedPost];
  await insertPosts(t.db, [{ userId: bob.id, title: "Bob's only post", createdAt: at(5) }]);
  // Comments on "Middle" inserted out of time order: oldest-first must follow created_at, not id.
  await insertComments(t.db, [
    { postId: middle.id, userId: bob.id, body: 'second', createdAt: at(15) },
    { postId: middle.id, userId: carol.id, body: 'first', createdAt: at(12) },
    { postId: middle.id, userId: alice.id, body: 'third', createdAt: at(18) },
  ]);
});

afterAll(async () => {
  await t?.close();
});

describe('demonstration routes', () => {
  it('GET /hello greets the world', async () => {
    const res = await get('/hello');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ message: 'Halo Dunia!' });
  });

  it('POST /greet greets by name', async () => {
    const res = await postJson('/greet', { name: 'Budi' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'Halo, Budi!' });
  });

  it.each([
    ['a missing name', {}],
    ['an empty name', { name: '' }],
    ['a whitespace name', { name: '   ' }],
    ['a numeric name', { name: 42 }],
    ['a null name', { name: null }],
    ['an array name', { name: ['Budi'] }],
    ['a JSON string body', 'Budi'],
    ['a JSON null body', null],
  ])('POST /greet with %s → 400 name is required', async (_, body) => {
    expectError(await postJson('/greet', body), 400, 'name is required');
  });

  it('POST /greet with no body → 400 name is required', async () => {
    expectError(await call('POST', '/greet'), 400, 'name is required');
  });

  it('POST /greet with a non-JSON content type is not parsed → 400 name is required', async () => {
    const res = await call('POST', '/greet', { body: '{"name":"Budi"}', headers: { 'content-type': 'text/plain' } });
    expectError(res, 400, 'name is required');
  });

  it('malformed JSON → 400 Invalid JSON', async () => {
    const res = await call('POST', '/greet', { body: '{"name": "Budi"', headers: { 'content-type': 'application/json' } });
    expectError(res, 400, 'Invalid JSON');
  });

  it('a body over 1 MiB → 413 Payload too large', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    expect(Buffer.byteLength(body)).toBeGreaterThan(1024 * 1024);
    expectError(await call('POST', '/greet', { body, headers: { 'content-type': 'application/json' } }), 413, 'Payload too large');
  });

  it('a body just under 1 MiB is accepted', async () => {
    const name = 'x'.repeat(1024 * 1024 - 20);
    const res = await postJson('/greet', { name });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: `Halo, ${name}!` });
  });
});

describe('GET /users/:userId/posts', () => {
  it('lists the user’s posts newest first with REST field names, integer ids and UTC timestamps', async () => {
    const res = await get(`/users/${alice.id}/posts`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body!)).toEqual(['data']);
    const posts = res.body!.data as Record<string, unknown>[];
    expect(posts.map((p) => p.title)).toEqual(['Newest', 'Middle', 'Oldest']);
    expect(posts.map((p) => p.id)).toEqual([newest.id, middle.id, oldest.id]);
    for (const p of posts) {
      expect(Object.keys(p).sort()).toEqual(['body', 'created_at', 'id', 'title', 'user_id']);
      expect(Number.isInteger(p.id)).toBe(true);
      expect(p.user_id).toBe(alice.id);
      expect(p.created_at).toMatch(ISO_UTC);
    }
    expect(posts[0]).toEqual({ id: newest.id, user_id: alice.id, title: 'Newest', body: 'last by time', created_at: at(20) });
  });

  it('a user with no posts → 200 with an empty list', async () => {
    const res = await get(`/users/${carol.id}/posts`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [] });
  });

  it('an unknown user → 404 Not found', async () => {
    expectError(await get('/users/999999/posts'), 404, 'Not found');
    expectError(await get('/users/0/posts'), 404, 'Not found');
  });
});

describe('GET /posts/:id', () => {
  it('answers the post with its author (no email) and its comments oldest first, each with author_name', async () => {
    const res = await get(`/posts/${middle.id}`);
    expect(res.status).toBe(200);
    const data = res.body!.data as Record<string, any>; // any: asserted field by field below
    expect(data).toMatchObject({
      id: middle.id,
      user_id: alice.id,
      title: 'Middle',
      body: 'second by time, first by id',
      created_at: at(10),
    });
    expect(data.author).toEqual({ id: alice.id, name: 'Alice', avatar: 'https://img.example.com/alice.png' });
    expect(JSON.stringify(res.body)).not.toContain('@example.com');
    const comments = data.comments as Record<string, unknown>[];
    expect(comments.map((c) => [c.body, c.author_name])).toEqual([
      ['first', 'Carol'],
      ['second', 'Bob'],
      ['third', 'Alice'],
    ]);
    for (const c of comments) {
      expect(Object.keys(c).sort()).toEqual(['author_name', 'body', 'created_at', 'id', 'post_id', 'user_id']);
      expect(Number.isInteger(c.id)).toBe(true);
      expect(c.post_id).toBe(middle.id);
      expect(c.created_at).toMatch(ISO_UTC);
    }
    expect(comments[0]).toMatchObject({ user_id: carol.id, created_at: at(12) });
  });

  it('an author without an avatar has avatar null, and a post without comments an empty list', async () => {
    const [bobsPost] = (await get(`/users/${bob.id}/posts`)).body!.data as { id: number }[];
    const res = await get(`/posts/${bobsPost!.id}`);
    expect(res.status).toBe(200);
    expect(res.body!.data.author).toEqual({ id: bob.id, name: 'Bob', avatar: null });
    expect(res.body!.data.comments).toEqual([]);
  });

  it('an unknown post → 404 Not found', async () => {
    expectError(await get('/posts/999999'), 404, 'Not found');
  });
});

describe('GET /posts/:id/comments', () => {
  it('lists the comments oldest first', async () => {
    const res = await get(`/posts/${middle.id}/comments`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body!)).toEqual(['data']);
    const comments = res.body!.data as Record<string, unknown>[];
    expect(comments.map((c) => c.body)).toEqual(['first', 'second', 'third']);
    expect(comments.map((c) => c.created_at)).toEqual([at(12), at(15), at(18)]);
  });

  it('a post without comments → 200 with an empty list', async () => {
    expect((await get(`/posts/${newest.id}/comments`)).body).toEqual({ data: [] });
  });

  it('an unknown post → 404 Not found', async () => {
    expectError(await get('/posts/999999/comments'), 404, 'Not found');
  });
});

describe('non-numeric ids', () => {
  const bad = [
    'abc',
    '1.5',
    '-1',
    '1e3',
    '0x10',
    ' 1',
    '1234567890123456',
    encodeURIComponent("' OR 1=1--"),
    encodeURIComponent('1; DROP TABLE posts'),
  ];
  const paths = (id: string) => [`/users/${id}/posts`, `/posts/${id}`, `/posts/${id}/comments`];

  it.each(bad.map((id) => [id]))('%s → 400 Invalid id on every content route, never 500', async (id) => {
    for (const path of paths(id)) expectError(await get(path), 400, 'Invalid id');
  });

  // The router rejects a malformed percent-escape before any route runs; the kit maps it to 400.
  it('a malformed percent-escape in an id → 400, never 500', async () => {
    for (const id of ['%zz', '%E0%A4%A']) {
      for (const path of paths(id)) {
        const res = await get(path);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'Invalid id' });
      }
    }
  });

  it('the tables survive an injection attempt', async () => {
    expect((await get(`/users/${alice.id}/posts`)).body!.data).toHaveLength(3);
  });
});

describe('routing', () => {
  it('a wrong method on a known path → 405 with Allow', async () => {
    const del = await call('DELETE', '/hello');
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('GET, HEAD');
    expect(del.body).toEqual({ error: 'Method not allowed' });

    const greet = await get('/greet');
    expect(greet.status).toBe(405);
    expect(greet.headers.get('allow')).toBe('POST');
    expect(greet.body).toEqual({ error: 'Method not allowed' });

    const posts = await call('PUT', `/posts/${middle.id}`, { body: '{}', headers: { 'content-type': 'application/json' } });
    expect(posts.status).toBe(405);
    expect(posts.headers.get('allow')).toBe('GET, HEAD');
  });

  it('an unknown route → 404 Not found', async () => {
    expectError(await get('/nope'), 404, 'Not found');
    expectError(await call('POST', '/users'), 404, 'Not found');
    expectError(await get('/posts'), 404, 'Not found');
  });
});

describe('request ids', () => {
  it('echoes a sent X-Request-Id', async () => {
    const res = await get('/hello', { 'x-request-id': 'req-123.abc:def' });
    expect(res.headers.get('x-request-id')).toBe('req-123.abc:def');
  });

  it('generates one when absent (and on errors too)', async () => {
    const ok = await get('/hello');
    const missing = await get('/nope');
    expect(ok.headers.get('x-request-id')).toMatch(UUID);
    expect(missing.headers.get('x-request-id')).toMatch(UUID);
    expect(ok.headers.get('x-request-id')).not.toBe(missing.headers.get('x-request-id'));
  });

  it('replaces an insane X-Request-Id with a fresh one', async () => {
    const res = await get('/hello', { 'x-request-id': 'has spaces and <html>' });
    expect(res.headers.get('x-request-id')).toMatch(UUID);
  });
});

describe('health', () => {
  it('/healthz → 200', async () => {
    const res = await get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('/readyz → 200 (a real database ping)', async () => {
    const res = await get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready' });
  });
});
