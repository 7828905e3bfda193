import { setTimeout as sleep } from 'node:timers/promises';
import type { User } from '@halo/kit/domain';
import { isHaloError } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import type { PasswordHasher, UserDirectory } from '../domain/accounts';
import type { AuthStore } from './store';

/**
 * Demo passwords for the users content seeds (docs/api/auth.md "Seeded demo data"; embedded dev mode
 * only). Idempotent: a user who already has credentials keeps them, and nothing is hashed twice.
 *
 * Each comes with its argon2id hash, made once with the production parameters (ARGON2_OPTIONS) and
 * a salt of its own: the passwords are public, and a cold `npm start` spent ~0.3 s of CPU, at the
 * end of its path to "ready", hashing them again. A login verifies them like any other hash. Once
 * the parameters change (`needsRehash`), the seed hashes the password as before.
 */
export const DEMO_CREDENTIALS = [
  {
    email: 'admin@halo.local',
    password: 'admin-password',
    hash: '$argon2id$v=19$m=19456,p=1,t=2$P1un6OLfKnlV5e2nmSRp7g$PKK9xewWr/G0DeTY+xCXAIXhWfU0H7T+vcyML+DLVOc',
  },
  {
    email: 'alice@halo.local',
    password: 'password123',
    hash: '$argon2id$v=19$m=19456,p=1,t=2$FziK7vwNHHy9oslNYMq9Qw$I1Qt9SfZP8kKFckuiJXYK0vTwgg5INllu2LqW5D33Dc',
  },
  {
    email: 'bob@halo.local',
    password: 'password123',
    hash: '$argon2id$v=19$m=19456,p=1,t=2$JS3aILGAjUqaEtrFjcVUXw$FcX3nP1l81DNhbFS2BwnIxAEBAlpkEjJuWfe2XJlN1M',
  },
] as const;

export async function seedDemoCredentials(deps: {
  store: AuthStore;
  users: UserDirectory;
  passwords: PasswordHasher;
  logger: Logger;
  /** How long to wait for content (the services start in parallel). */
  waitMs?: number;
}): Promise<void> {
  const { store, users, passwords, logger } = deps;
  const until = Date.now() + (deps.waitMs ?? 30_000);
  const found: { user: User; password: string; hash: string }[] = [];
  for (const demo of DEMO_CREDENTIALS) {
    const user = await lookUp(users, demo.email, until);
    if (user) found.push({ user, password: demo.password, hash: demo.hash });
    else logger.warn({ email: demo.email }, 'demo user not found in content; no demo password set');
  }
  const have = await store.hasCredentials(found.map((f) => f.user.id));
  let created = 0;
  for (const { user, password, hash } of found) {
    if (have.has(user.id)) continue;
    const stored = passwords.needsRehash(hash) ? await passwords.hash(password) : hash;
    if (await store.insertCredentialsIfMissing(user.id, stored)) created++;
  }
  logger.info({ created }, created ? 'demo credentials seeded' : 'demo credentials already present');
}

/** Asks content until it answers (or the time is up): UNAVAILABLE and NOT_FOUND both mean "not yet". */
async function lookUp(users: UserDirectory, email: string, until: number): Promise<User | null> {
  for (;;) {
    try {
      const user = await users.byEmail(email, 5_000);
      if (user) return user;
    } catch (err) {
      if (!isHaloError(err) || err.kind !== 'UNAVAILABLE') throw err;
    }
    if (Date.now() + 500 > until) return null;
    await sleep(500);
  }
}
