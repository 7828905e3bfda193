import { serviceIdentityFor } from '@halo/kit/auth';
import { peerChannel } from '@halo/kit/grpc';
import { capturingLogger, testIdentityEnv } from '@halo/kit/testing';
import { DEMO_CREDENTIALS, seedDemoCredentials } from '../src/db/seed';
import { AuthStore } from '../src/db/store';
import { contentUsers } from '../src/grpc/clients/content-users';
import { createPasswordHasher } from '../src/adapters/argon2/passwords';
import { decodeJwt, login, startTestSystem, type TestSystem } from './helpers';

let sys: TestSystem;

const credentials = async () =>
  (await sys.authDb.query<{ user_id: number; password_hash: string }>('SELECT user_id, password_hash FROM credentials ORDER BY user_id'))
    .rows;

beforeAll(async () => {
  // Both services seed, as in the embedded dev mode: content the users, auth their passwords.
  sys = await startTestSystem({ SEED_DEMO_DATA: 'true' }, { SEED_DEMO_DATA: 'true' });
});

afterAll(async () => {
  await sys?.close();
});

describe('migrations', () => {
  it('create auth’s tables in its own schema', async () => {
    const { rows } = await sys.authDb.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [sys.authDb.schema],
    );
    expect(rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(['api_keys', 'credentials', 'refresh_tokens', 'schema_migrations']),
    );
    const applied = (await sys.authDb.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name);
    expect(applied).toContain('0001_init.sql');
  });
});

describe('demo credentials (SEED_DEMO_DATA)', () => {
  it.each([
    ['admin@halo.local', 'admin-password', 'Admin', 'admin'],
    ['alice@halo.local', 'password123', 'Alice', 'user'],
    ['bob@halo.local', 'password123', 'Bob', 'user'],
  ])('%s logs in with the demo password and gets role %s', async (email, password, name, role) => {
    const res = await login(sys.base, email, password);
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.token).payload).toMatchObject({ name, role });
  });

  it('stores the demo hashes made beforehand: each verifies its password, with the current parameters and a salt of its own', async () => {
    const passwords = await createPasswordHasher();
    for (const demo of DEMO_CREDENTIALS) {
      expect(await passwords.verify(demo.hash, demo.password)).toBe(true);
      expect(passwords.needsRehash(demo.hash)).toBe(false);
    }
    const stored = (await credentials()).map((c) => c.password_hash);
    expect([...stored].sort()).toEqual(DEMO_CREDENTIALS.map((d) => d.hash).sort());
  });

  it('is idempotent: a restart neither duplicates nor changes credentials', async () => {
    const before = await credentials();
    expect(before).toHaveLength(3);
    await sys.startAuth();
    await sys.startAuth();
    expect(await credentials()).toEqual(before);
  });

  it('keeps a password that was changed', async () => {
    const [first] = await credentials();
    await sys.authDb.query(`UPDATE credentials SET password_hash = 'changed' WHERE user_id = $1`, [first!.user_id]);
    await sys.startAuth();
    expect((await credentials())[0]!.password_hash).toBe('changed');
  });

  it('gives up after its wait when content never answers, with a warning, and without throwing', async () => {
    const { logger, lines } = capturingLogger('warn');
    const identity = serviceIdentityFor('auth', testIdentityEnv('auth'));
    const users = contentUsers(peerChannel({ peer: 'content', address: '127.0.0.1:1', deadlineMs: 200, identity }));
    try {
      await seedDemoCredentials({
        store: new AuthStore(sys.authDb),
        users,
        passwords: await createPasswordHasher(),
        logger,
        waitMs: 600,
      });
    } finally {
      users.close();
    }
    expect(lines.filter((l) => l.msg === 'demo user not found in content; no demo password set')).toHaveLength(3);
  });
});
