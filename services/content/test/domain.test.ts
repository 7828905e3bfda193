import type { Caller } from '@halo/kit/auth';
import { Content, type ContentRepo } from '../src/domain/content';
import type { User } from '../src/domain/model';
import type { NewUser } from '../src/domain/rules';

/** The content domain's own rules (authorisation, not-found, batch shapes) without I/O: an in-memory repo. */
function memoryRepo(users: User[]) {
  const inserted: NewUser[] = [];
  const repo: ContentRepo = {
    usersByIds: async (ids) => users.filter((u) => ids.includes(u.id)),
    userByEmail: async (email) => users.find((u) => u.email === email) ?? null,
    allUsers: async () => users,
    insertUser: async (u) => {
      inserted.push(u);
      return users.some((x) => x.email === u.email) ? null : { ...u, id: 100 + inserted.length, createdAt: '2026-01-01T00:00:00.000Z' };
    },
    deleteUser: async (id) => users.some((u) => u.id === id),
    postsByIds: async () => [],
    postsByUserIds: async () => [],
    commentsByPostIds: async () => [],
    postsPage: async () => [],
  };
  return { repo, inserted };
}

const someone: User = { id: 1, name: 'Ana', email: 'ana@example.com', avatar: null, role: 'user', createdAt: '2026-01-01T00:00:00.000Z' };
const caller = (role: Caller['role'], scopes: string[] | null = null): Caller => ({
  id: 9,
  name: 'c',
  role,
  scopes,
  apiKeyId: scopes ? '1' : null,
});
const kind = (kindName: string, message?: string) => expect.objectContaining({ kind: kindName, ...(message ? { message } : {}) });

describe('createUser: admins only, decided by the domain before anything else', () => {
  it.each([
    ['anonymous', 'UNAUTHENTICATED', null],
    ['a user', 'FORBIDDEN', caller('user')],
    // A key's users:write is declared on the mutation and held to by the kit (e2e/api-key-scopes.test.ts).
  ])('%s → %s, even with an invalid body, and nothing is written', async (_, expected, who) => {
    const { repo, inserted } = memoryRepo([someone]);
    await expect(new Content(repo).createUser(who, { name: '', email: 'nope' })).rejects.toEqual(kind(expected));
    expect(inserted).toEqual([]);
  });

  it('an admin (or an admin key with users:write) creates, after validation; a taken email is 409', async () => {
    const { repo, inserted } = memoryRepo([someone]);
    const content = new Content(repo);
    await expect(content.createUser(caller('admin'), { name: ' ', email: 'x@example.com' })).rejects.toEqual(
      kind('BAD_REQUEST', 'name is required'),
    );
    await expect(content.createUser(caller('admin', ['users:write']), { name: 'Budi', email: 'BUDI@example.com' })).resolves.toMatchObject({
      name: 'Budi',
      email: 'budi@example.com',
    });
    await expect(content.createUser(caller('admin'), { name: 'Ana', email: 'ana@example.com' })).rejects.toEqual(kind('CONFLICT'));
    expect(inserted.map((u) => u.email)).toEqual(['budi@example.com', 'ana@example.com']);
  });

  it('registerUser (auth, over gRPC) has no person to authorise and applies the same validation', async () => {
    const { repo } = memoryRepo([]);
    await expect(new Content(repo).registerUser({ name: 'Cici', email: 'cici@example.com' })).resolves.toMatchObject({ name: 'Cici' });
    await expect(new Content(repo).registerUser({ name: 'Cici', email: 'cici' })).rejects.toEqual(kind('BAD_REQUEST', 'email is invalid'));
  });
});

describe('reads', () => {
  it('batch lookups answer in the order asked with null for unknown ids; single lookups are NOT_FOUND', async () => {
    const content = new Content(memoryRepo([someone]).repo);
    expect(await content.lookUpUsers([7, 1])).toEqual([null, someone]);
    expect(await content.usersByIds([7, 1])).toEqual([someone]);
    await expect(content.user(7)).rejects.toEqual(kind('NOT_FOUND', 'Not found'));
    await expect(content.userByEmail('  ANA@example.com ')).resolves.toEqual(someone);
    await expect(content.userByEmail('zed@example.com')).rejects.toEqual(kind('NOT_FOUND'));
  });
});

describe('User.email: the user themself and admins read it; everyone else an empty string', () => {
  const content = new Content(memoryRepo([someone]).repo);
  it.each([
    ['anonymous', null, ''],
    ['another user', { ...caller('user'), id: 2 }, ''],
    ['another user’s API key', { ...caller('user', ['profile:read']), id: 2 }, ''],
    ['the user themself', { ...caller('user'), id: someone.id }, 'ana@example.com'],
    ['an admin', caller('admin'), 'ana@example.com'],
    ['the user’s own API key with profile:read', { ...caller('user', ['profile:read']), id: someone.id }, 'ana@example.com'],
    ['the user’s own API key without profile:read', { ...caller('user', ['chat:read']), id: someone.id }, ''],
    ['an admin’s API key with users:email:read', caller('admin', ['users:email:read']), 'ana@example.com'],
    ['an admin’s API key without users:email:read (catalog:write only)', caller('admin', ['catalog:write']), ''],
  ])('%s → %j', (_, who, expected) => {
    expect(content.emailOf(who, someone)).toBe(expected);
  });
});
