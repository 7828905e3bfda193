import type { OAuthIdentity } from '../src/domain/identities';
import { login, register, startTestSystem, uniqueEmail, type TestSystem } from './helpers';

/**
 * Which local user an OAuth login becomes (Accounts.signInWith), against the real content service:
 * the linked one when the provider account is linked, otherwise the user with the verified email
 * (created without a password when there is none); the link is written either way.
 */
let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem();
});

afterAll(async () => {
  await sys?.close();
});

const signIn = (subject: string, email: string, name = 'Oka') =>
  sys.auth.domain.accounts.signInWith({ provider: 'dev', subject, email, name } satisfies OAuthIdentity);

const link = async (subject: string) =>
  (
    await sys.authDb.query<{ user_id: number; email: string }>(
      `SELECT user_id, email FROM oauth_identities WHERE provider = 'dev' AND subject = $1`,
      [subject],
    )
  ).rows[0];

const contentUsersWith = async (email: string) =>
  (await sys.contentDb.query<{ id: number }>('SELECT id FROM users WHERE email = $1', [email])).rows.map((r) => r.id);

it('a first login with a new verified email creates the user, without a password, and links the account', async () => {
  const email = uniqueEmail('oauth-new');
  const user = await signIn('sub-new', email, 'Oka Putra');
  expect(user).toMatchObject({ email, name: 'Oka Putra', role: 'user' });
  expect(await contentUsersWith(email)).toEqual([user.id]);
  expect(await link('sub-new')).toEqual({ user_id: user.id, email });
  const { rows } = await sys.authDb.query('SELECT 1 FROM credentials WHERE user_id = $1', [user.id]);
  expect(rows).toEqual([]);
});

it('a first login with the verified email of a registered user signs in as that user', async () => {
  const email = uniqueEmail('oauth-reg');
  const registered = await register(sys.base, 'Registered', email, 'password123');
  expect((await signIn('sub-reg', email)).id).toBe(registered.id);
  expect((await link('sub-reg'))?.user_id).toBe(registered.id);
  // The password still works: the OAuth login changed nothing about the account.
  expect((await login(sys.base, email, 'password123')).status).toBe(200);
});

it('later logins follow the link, even after the email at the provider changed', async () => {
  const before = uniqueEmail('oauth-before');
  const after = uniqueEmail('oauth-after');
  const first = await signIn('sub-move', before);
  const again = await signIn('sub-move', after);
  expect(again.id).toBe(first.id);
  expect(await contentUsersWith(after)).toEqual([]);
  expect(await link('sub-move')).toEqual({ user_id: first.id, email: after });
});

it('when the linked user is gone, the verified email decides again and the link moves', async () => {
  const email = uniqueEmail('oauth-gone');
  const first = await signIn('sub-gone', email);
  await sys.contentDb.query('DELETE FROM users WHERE id = $1', [first.id]);
  const next = await signIn('sub-gone', email);
  expect(next.id).not.toBe(first.id);
  expect(await contentUsersWith(email)).toEqual([next.id]);
  expect((await link('sub-gone'))?.user_id).toBe(next.id);
});
