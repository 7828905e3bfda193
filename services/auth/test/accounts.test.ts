import { createHash, createHmac } from 'node:crypto';
import argon2 from 'argon2';
import { callUnary, grpc } from '@halo/kit/grpc';
import { testIdentity } from '@halo/kit/testing';
import { content as pb } from '@halo/proto';
import {
  bearer,
  decodeJwt,
  gql,
  http,
  login,
  post,
  register,
  signUp,
  startTestSystem,
  TEST_JWT_SECRET,
  uniqueEmail,
  type TestSystem,
} from './helpers';
import { restManifest } from '../src/rest/manifest';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem();
});

afterAll(async () => {
  await sys?.close();
});

describe('POST /auth/register', () => {
  it('201 with {user:{id,name,email}} (email normalised), and a credentials row holding an argon2id hash', async () => {
    const email = uniqueEmail('Reg');
    const res = await post(sys.base, '/auth/register', { name: '  Rina ', email: `  ${email.toUpperCase()} `, password: 'password123' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ user: { id: expect.any(Number), name: 'Rina', email: email.toLowerCase() } });
    const { rows } = await sys.authDb.query<{ password_hash: string }>('SELECT password_hash FROM credentials WHERE user_id = $1', [
      res.body.user.id,
    ]);
    expect(rows[0]!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect(JSON.stringify(res.body)).not.toContain('password');
  });

  it('409 Email already registered for a duplicate, in any letter case; the first account is untouched', async () => {
    const email = uniqueEmail('dup');
    await register(sys.base, 'First', email, 'password123');
    for (const again of [email, email.toUpperCase(), ` ${email} `]) {
      const res = await post(sys.base, '/auth/register', { name: 'Second', email: again, password: 'another-password' });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'Email already registered' });
    }
    expect((await login(sys.base, email, 'password123')).status).toBe(200);
    expect((await login(sys.base, email, 'another-password')).status).toBe(401);
  });

  it.each([
    [{ email: 'a@example.com', password: 'password123' }, 'name is required'],
    [{ name: '   ', email: 'a@example.com', password: 'password123' }, 'name is required'],
    [{ name: 42, email: 'a@example.com', password: 'password123' }, 'name is required'],
    [{ name: 'A', password: 'password123' }, 'email is required'],
    [{ name: 'A', email: 'not-an-email', password: 'password123' }, 'email is invalid'],
    [{ name: 'A', email: 'a@example.com' }, 'password is required'],
    [{ name: 'A', email: 'a@example.com', password: 'short' }, 'password must be at least 8 characters'],
    [{ name: 'A', email: 'a@example.com', password: '1234567' }, 'password must be at least 8 characters'],
  ])('400 for %j → %s', async (body, error) => {
    const res = await post(sys.base, '/auth/register', body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error });
  });

  it('400 Invalid JSON, 413 Payload too large, 405 for a wrong method, 404 for an unknown route', async () => {
    const bad = await post(sys.base, '/auth/register', '{"name":');
    expect([bad.status, bad.body]).toEqual([400, { error: 'Invalid JSON' }]);
    const big = await post(sys.base, '/auth/register', { name: 'x'.repeat(1_100_000) });
    expect([big.status, big.body]).toEqual([413, { error: 'Payload too large' }]);
    const wrong = await http(sys.base, 'GET', '/auth/register');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await http(sys.base, 'GET', '/auth/nope')).status).toBe(404);
  });

  it('a credential write that fails is compensated: content forgets the user, and the email can register again', async () => {
    const email = uniqueEmail('comp');
    // A real fault in the real database: every credentials insert fails while the trigger exists.
    await sys.authDb.exec(`
      CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$;
      CREATE TRIGGER fail_credentials BEFORE INSERT ON credentials FOR EACH ROW EXECUTE FUNCTION fail_insert();`);
    try {
      const res = await post(sys.base, '/auth/register', { name: 'Comp', email, password: 'password123' });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'Internal server error' });
    } finally {
      await sys.authDb.exec('DROP TRIGGER fail_credentials ON credentials; DROP FUNCTION fail_insert();');
    }
    const { rows } = await sys.contentDb.query('SELECT id FROM users WHERE email = $1', [email]);
    expect(rows).toEqual([]);
    expect((await post(sys.base, '/auth/register', { name: 'Comp', email, password: 'password123' })).status).toBe(201);
  });
});

describe('POST /auth/login', () => {
  let email: string;
  let userId: number;
  const password = 'password123';

  beforeAll(async () => {
    email = uniqueEmail('login');
    userId = (await register(sys.base, 'Lina', email, password)).id;
  });

  it('200 {token, accessToken, user:{id,name}} with the same JWT twice and the refresh cookie', async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await login(sys.base, email.toUpperCase(), password);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ token: expect.any(String), accessToken: expect.any(String), user: { id: userId, name: 'Lina' } });
    expect(res.body.token).toBe(res.body.accessToken);
    expect(res.headers.get('cache-control')).toBe('no-store');

    const { header, payload } = decodeJwt(res.body.token);
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({ sub: String(userId), name: 'Lina', role: 'user', iat: expect.any(Number), exp: expect.any(Number) });
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.exp - payload.iat).toBe(15 * 60);

    expect(res.headers.get('set-cookie')).toBe(
      `refresh_token=${res.refreshToken}; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=2592000`,
    );
    expect(res.refreshToken).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('stores only the sha256 of the refresh token', async () => {
    const res = await login(sys.base, email, password);
    const { rows } = await sys.authDb.query<{ token_hash: string; row: string }>(
      `SELECT token_hash, row_to_json(r)::text AS row FROM refresh_tokens r WHERE user_id = $1`,
      [userId],
    );
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    expect(rows.map((r) => r.token_hash)).toContain(sha(res.refreshToken!));
    for (const r of rows) expect(r.row).not.toContain(res.refreshToken);
  });

  it('a wrong password and an unknown email get the same 401 answer', async () => {
    const wrong = await login(sys.base, email, 'wrong-password');
    const unknown = await login(sys.base, uniqueEmail('ghost'), password);
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Email atau password salah' });
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    // The OpenAPI document (composed from the manifest) names the message the service answers.
    const documented = restManifest.routes.find((r) => r.id === 'login')!.responses[401].description;
    expect(documented).toContain(`\`${(wrong.body as { error: string }).error}\``);
  });

  it('a user without a password (e.g. created by OAuth) cannot log in with any password', async () => {
    const client = new pb.UserServiceClient(`127.0.0.1:${sys.content.grpcPort}`, grpc.credentials.createInsecure());
    const email2 = uniqueEmail('nopass');
    try {
      await callUnary(
        client,
        client.createUser,
        { name: 'No Pass', email: email2, avatar: '' },
        { defaultDeadlineMs: 2000, auth: { identity: testIdentity('auth'), audience: 'content' } },
      );
    } finally {
      client.close();
    }
    const res = await login(sys.base, email2, 'password123');
    expect([res.status, res.body]).toEqual([401, { error: 'Email atau password salah' }]);
  });

  it('a hash made with weaker parameters is replaced by an OWASP-strength one at the next login', async () => {
    const me = await signUp(sys.base);
    const weak = await argon2.hash(me.password, { type: argon2.argon2id, memoryCost: 4096, timeCost: 1, parallelism: 1 });
    await sys.authDb.query('UPDATE credentials SET password_hash = $2 WHERE user_id = $1', [me.user.id, weak]);
    expect((await login(sys.base, me.email, me.password)).status).toBe(200);
    const { rows } = await sys.authDb.query<{ password_hash: string }>('SELECT password_hash FROM credentials WHERE user_id = $1', [
      me.user.id,
    ]);
    expect(rows[0]!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect((await login(sys.base, me.email, me.password)).status).toBe(200);
  });

  it.each([
    [{ password: 'x' }, 'email is required'],
    [{ email: 'a@example.com' }, 'password is required'],
    [{ email: 'a@example.com', password: '' }, 'password is required'],
  ])('400 for %j → %s', async (body, error) => {
    const res = await post(sys.base, '/auth/login', body);
    expect([res.status, res.body]).toEqual([400, { error }]);
  });
});

describe('GET /profile', () => {
  let me: Awaited<ReturnType<typeof signUp>>;

  beforeAll(async () => {
    me = await signUp(sys.base, { name: 'Pia' });
  });

  it('200 with {id,name,email,avatar,role,created_at} and nothing else', async () => {
    const res = await http(sys.base, 'GET', '/profile', { headers: bearer(me.token) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: me.user.id,
      name: 'Pia',
      email: me.email,
      avatar: null,
      role: 'user',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    expect(JSON.stringify(res.body)).not.toMatch(/password|hash|argon/i);
  });

  it.each([
    ['no header', {}],
    ['an empty header', { authorization: '' }],
    ['"Bearer" alone', { authorization: 'Bearer ' }],
  ])('401 Token required with %s', async (_, headers) => {
    const res = await http(sys.base, 'GET', '/profile', { headers });
    expect([res.status, res.body]).toEqual([401, { error: 'Token required' }]);
  });

  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = () => Math.floor(Date.now() / 1000);
  const claims = () => ({ sub: String(me.user.id), name: 'Pia', role: 'user', iat: now(), exp: now() + 600 });
  const hs256 = (header: object, payload: object, secret = TEST_JWT_SECRET) => {
    const input = `${b64(header)}.${b64(payload)}`;
    return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
  };

  it.each([
    ['alg none', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`],
    ['an unsigned token (h.p.)', () => `${me.token.split('.').slice(0, 2).join('.')}.`],
    [
      'a token signed with another secret',
      () => hs256({ alg: 'HS256', typ: 'JWT' }, claims(), 'another-secret-0123456789abcdef0123456789'),
    ],
    ['a token expired beyond the 30 s skew', () => hs256({ alg: 'HS256', typ: 'JWT' }, { ...claims(), iat: now() - 700, exp: now() - 31 })],
    [
      'a tampered payload',
      () => {
        const [h, , s] = me.token.split('.');
        return `${h}.${b64({ ...claims(), role: 'admin' })}.${s}`;
      },
    ],
    ['garbage', () => 'not-a-jwt'],
  ])('401 Invalid token for %s', async (_, make) => {
    const res = await http(sys.base, 'GET', '/profile', { headers: bearer(make()) });
    expect([res.status, res.body]).toEqual([401, { error: 'Invalid token' }]);
  });

  it('a token expired by less than the 30 s skew is still accepted', async () => {
    const token = hs256({ alg: 'HS256', typ: 'JWT' }, { ...claims(), iat: now() - 600, exp: now() - 5 });
    expect((await http(sys.base, 'GET', '/profile', { headers: bearer(token) })).status).toBe(200);
  });
});

describe('GraphQL me', () => {
  it('returns the caller’s id with a token', async () => {
    const me = await signUp(sys.base);
    const res = await gql(sys.base, '{ me { id } }', bearer(me.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { me: { id: String(me.user.id) } } });
  });

  it('anonymous → UNAUTHENTICATED and me null', async () => {
    const res = await gql(sys.base, '{ me { id } }');
    expect(res.body.data).toEqual({ me: null });
    expect(res.body.errors![0]).toMatchObject({ message: 'Token required', extensions: { code: 'UNAUTHENTICATED' } });
  });

  it('an invalid token → HTTP 401 UNAUTHENTICATED before execution', async () => {
    const res = await gql(sys.base, '{ me { id } }', bearer('garbage'));
    expect(res.status).toBe(401);
    expect(res.body.errors![0]).toMatchObject({ message: 'Invalid token', extensions: { code: 'UNAUTHENTICATED' } });
  });

  it('the subgraph only references User (content owns its fields)', async () => {
    const res = await gql(sys.base, '{ _service { sdl } }');
    const sdl = res.body.data!._service.sdl as string;
    expect(sdl).toMatch(/type User\s+@key\(fields: "id", resolvable: false\)\s*{\s*id: ID!\s*}/);
  });
});
