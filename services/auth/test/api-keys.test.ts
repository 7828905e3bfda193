import { createHash } from 'node:crypto';
import { SERVICE_TOKEN_METADATA } from '@halo/kit/auth';
import { HaloError } from '@halo/kit/errors';
import { callUnary, grpc } from '@halo/kit/grpc';
import { testIdentity } from '@halo/kit/testing';
import { auth as pb } from '@halo/proto';
import { bearer, decodeJwt, gql, http, post, signUp, signUpAdmin, startTestSystem, type TestSystem } from './helpers';

let sys: TestSystem;
let client: pb.ApiKeyServiceClient;
let admin: Awaited<ReturnType<typeof signUpAdmin>>;
let otherAdmin: Awaited<ReturnType<typeof signUpAdmin>>;
let user: Awaited<ReturnType<typeof signUp>>;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const exchange = (apiKey: string) =>
  callUnary(
    client,
    client.exchangeApiKey,
    { apiKey },
    { defaultDeadlineMs: 2000, requestId: 'api-key-test', auth: { identity: testIdentity('gateway'), audience: 'auth' } },
  );
const createKey = (token: string, body: unknown) => post(sys.base, '/auth/api-keys', body, bearer(token));

beforeAll(async () => {
  sys = await startTestSystem();
  client = new pb.ApiKeyServiceClient(sys.grpcAddr, grpc.credentials.createInsecure());
  admin = await signUpAdmin(sys);
  otherAdmin = await signUpAdmin(sys);
  user = await signUp(sys.base, { name: 'Plain' });
});

afterAll(async () => {
  client?.close();
  await sys?.close();
});

describe('who may manage API keys', () => {
  it.each([
    ['POST', '/auth/api-keys'],
    ['GET', '/auth/api-keys'],
    ['DELETE', '/auth/api-keys/1'],
  ])('%s %s: 401 Token required without a token, 401 Invalid token with a bad one, 403 for a non-admin', async (method, path) => {
    const body = method === 'POST' ? { name: 'k', scopes: ['profile:read'] } : undefined;
    const anon = await http(sys.base, method, path, { body });
    expect([anon.status, anon.body]).toEqual([401, { error: 'Token required' }]);
    const bad = await http(sys.base, method, path, { body, headers: bearer('nope') });
    expect([bad.status, bad.body]).toEqual([401, { error: 'Invalid token' }]);
    const nonAdmin = await http(sys.base, method, path, { body, headers: bearer(user.token) });
    expect([nonAdmin.status, nonAdmin.body]).toEqual([403, { error: 'Forbidden' }]);
  });
});

describe('POST /auth/api-keys', () => {
  it('201 {data:{id,name,prefix,scopes,created_at,key}}; the key is shown once and only its hash is stored', async () => {
    const res = await createKey(admin.token, { name: '  Billing sync ', scopes: ['payments:write', 'profile:read', 'profile:read'] });
    expect(res.status).toBe(201);
    const { data } = res.body;
    expect(data).toEqual({
      id: expect.any(Number),
      name: 'Billing sync',
      prefix: expect.stringMatching(/^halo_[0-9a-f]{8}$/),
      scopes: ['profile:read', 'payments:write'],
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      key: expect.stringMatching(/^halo_[0-9a-f]{8}_[A-Za-z0-9_-]{32}$/),
    });
    expect(data.key.startsWith(`${data.prefix}_`)).toBe(true);
    expect(res.headers.get('cache-control')).toBe('no-store');

    const { rows } = await sys.authDb.query<{ key_hash: string; owner_id: number; row: string }>(
      'SELECT key_hash, owner_id, row_to_json(k)::text AS row FROM api_keys k WHERE id = $1',
      [data.id],
    );
    expect(rows[0]!.key_hash).toBe(sha256(data.key));
    expect(rows[0]!.owner_id).toBe(admin.user.id);
    expect(rows[0]!.row).not.toContain(data.key.slice(14));
  });

  it.each([
    [{ scopes: ['profile:read'] }, 'name is required'],
    [{ name: ' ', scopes: ['profile:read'] }, 'name is required'],
    [{ name: 'k' }, 'scopes is required'],
    [{ name: 'k', scopes: [] }, 'scopes is required'],
    [{ name: 'k', scopes: 'profile:read' }, 'scopes must be an array of strings'],
    [{ name: 'k', scopes: ['profile:read', 7] }, 'scopes must be an array of strings'],
    [{ name: 'k', scopes: ['profile:read', 'admin:all'] }, 'unknown scope: admin:all'],
  ])('400 for %j → %s', async (body, error) => {
    const res = await createKey(admin.token, body);
    expect([res.status, res.body]).toEqual([400, { error }]);
  });
});

describe('GET /auth/api-keys and DELETE /auth/api-keys/:id', () => {
  it('lists only the caller’s keys, without key or hash, revoked ones marked', async () => {
    const a = (await createKey(admin.token, { name: 'list-a', scopes: ['catalog:write'] })).body.data;
    const b = (await createKey(admin.token, { name: 'list-b', scopes: ['users:write'] })).body.data;
    const theirs = (await createKey(otherAdmin.token, { name: 'theirs', scopes: ['catalog:write'] })).body.data;
    expect((await http(sys.base, 'DELETE', `/auth/api-keys/${b.id}`, { headers: bearer(admin.token) })).status).toBe(204);

    const res = await http(sys.base, 'GET', '/auth/api-keys', { headers: bearer(admin.token) });
    expect(res.status).toBe(200);
    const mine = res.body.data as Record<string, unknown>[];
    expect(mine.map((k) => k.id)).not.toContain(theirs.id);
    expect(mine.find((k) => k.id === a.id)).toEqual({
      id: a.id,
      name: 'list-a',
      prefix: a.prefix,
      scopes: ['catalog:write'],
      created_at: a.created_at,
      last_used_at: null,
      revoked: false,
      revoked_at: null,
    });
    expect(mine.find((k) => k.id === b.id)).toMatchObject({ revoked: true, revoked_at: expect.any(String) });
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(a.key);
    expect(text).not.toMatch(/hash/);
  });

  it('DELETE: someone else’s key or an unknown id → 404; a non-numeric id → 400; revoking twice → 204', async () => {
    const theirs = (await createKey(otherAdmin.token, { name: 'not-yours', scopes: ['catalog:write'] })).body.data;
    const del = (id: string | number) => http(sys.base, 'DELETE', `/auth/api-keys/${id}`, { headers: bearer(admin.token) });
    expect([(await del(theirs.id)).status, (await del(theirs.id)).body]).toEqual([404, { error: 'Not found' }]);
    expect((await del(999_999)).status).toBe(404);
    expect([(await del('abc')).status, (await del('abc')).body]).toEqual([400, { error: 'Invalid id' }]);
    // The other admin's key still works.
    await expect(exchange(theirs.key)).resolves.toMatchObject({ accessToken: expect.any(String) });
    const mine = (await createKey(admin.token, { name: 'twice', scopes: ['catalog:write'] })).body.data;
    expect((await del(mine.id)).status).toBe(204);
    expect((await del(mine.id)).status).toBe(204);
  });
});

describe('gRPC ApiKeyService.ExchangeApiKey', () => {
  it('returns a token for the owner with the key’s scopes (scope + akid) and the API-key TTL', async () => {
    const { data } = (await createKey(admin.token, { name: 'exchange', scopes: ['catalog:write', 'profile:read'] })).body;
    const res = await exchange(data.key);
    expect(res.expiresIn).toBe(300);
    const { header, payload } = decodeJwt(res.accessToken);
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({
      sub: String(admin.user.id),
      name: 'Root',
      role: 'admin',
      scope: 'profile:read catalog:write',
      akid: String(data.id),
      iat: expect.any(Number),
      exp: expect.any(Number),
    });
    expect(payload.exp - payload.iat).toBe(300);
  });

  it('the exchanged token reaches /profile only with profile:read, and may never manage keys', async () => {
    const withRead = (await createKey(admin.token, { name: 'reader', scopes: ['profile:read'] })).body.data;
    const without = (await createKey(admin.token, { name: 'writer', scopes: ['catalog:write'] })).body.data;
    const readToken = (await exchange(withRead.key)).accessToken;
    const writeToken = (await exchange(without.key)).accessToken;

    const ok = await http(sys.base, 'GET', '/profile', { headers: bearer(readToken) });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ id: admin.user.id, role: 'admin' });
    const denied = await http(sys.base, 'GET', '/profile', { headers: bearer(writeToken) });
    expect([denied.status, denied.body]).toEqual([403, { error: 'Forbidden' }]);

    // GraphQL `me` follows the same rule.
    expect((await gql(sys.base, '{ me { id } }', bearer(readToken))).body).toEqual({ data: { me: { id: String(admin.user.id) } } });
    const meDenied = await gql(sys.base, '{ me { id } }', bearer(writeToken));
    expect(meDenied.body.errors![0]).toMatchObject({ message: 'Forbidden', extensions: { code: 'FORBIDDEN' } });

    for (const token of [readToken, writeToken]) {
      expect((await http(sys.base, 'GET', '/auth/api-keys', { headers: bearer(token) })).status).toBe(403);
      expect((await createKey(token, { name: 'x', scopes: ['profile:read'] })).status).toBe(403);
    }
  });

  it('a revoked key → UNAUTHENTICATED Invalid API key', async () => {
    const { data } = (await createKey(admin.token, { name: 'to-revoke', scopes: ['profile:read'] })).body;
    await expect(exchange(data.key)).resolves.toBeDefined();
    expect((await http(sys.base, 'DELETE', `/auth/api-keys/${data.id}`, { headers: bearer(admin.token) })).status).toBe(204);
    const err = await exchange(data.key).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect(err).toMatchObject({ kind: 'UNAUTHENTICATED', message: 'Invalid API key' });
  });

  it.each([
    ['an unknown key', `halo_00000000_${'A'.repeat(32)}`],
    ['a malformed key', 'hello'],
    ['an empty key', ''],
  ])('%s → UNAUTHENTICATED Invalid API key', async (_, key) => {
    await expect(exchange(key)).rejects.toMatchObject({ kind: 'UNAUTHENTICATED', message: 'Invalid API key' });
  });

  it('the raw gRPC status is UNAUTHENTICATED (the method’s own, not a service-identity refusal)', async () => {
    const metadata = new grpc.Metadata();
    metadata.set(SERVICE_TOKEN_METADATA, await testIdentity('gateway').tokenFor('auth'));
    const status = await new Promise<grpc.ServiceError>((resolve) =>
      client.exchangeApiKey({ apiKey: 'nope' }, metadata, (err) => resolve(err!)),
    );
    expect(status.metadata.get('x-halo-refused')).toEqual([]);
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(status.details).toBe('Invalid API key');
  });

  it('updates last_used_at, at most once a minute per key', async () => {
    const { data } = (await createKey(admin.token, { name: 'usage', scopes: ['profile:read'] })).body;
    const lastUsed = async () =>
      (await sys.authDb.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys WHERE id = $1', [data.id])).rows[0]!
        .last_used_at;
    expect(await lastUsed()).toBeNull();
    await exchange(data.key);
    const first = await lastUsed();
    expect(first).toBeInstanceOf(Date);
    await exchange(data.key);
    expect(await lastUsed()).toEqual(first);
    // Once the last use is over a minute old, the next exchange records it again.
    await sys.authDb.query(`UPDATE api_keys SET last_used_at = now() - interval '2 minutes' WHERE id = $1`, [data.id]);
    const old = await lastUsed();
    await exchange(data.key);
    expect((await lastUsed())!.getTime()).toBeGreaterThan(old!.getTime());
  });

  it('a key whose owner no longer exists → UNAUTHENTICATED', async () => {
    const gone = await signUpAdmin(sys);
    const { data } = (await createKey(gone.token, { name: 'orphan', scopes: ['profile:read'] })).body;
    await sys.contentDb.query('DELETE FROM users WHERE id = $1', [gone.user.id]);
    await expect(exchange(data.key)).rejects.toMatchObject({ kind: 'UNAUTHENTICATED', message: 'Invalid API key' });
  });
});
