import { randomBytes } from 'node:crypto';
import argon2 from 'argon2';
import type { PasswordHasher } from '../../domain/accounts';

/** OWASP's argon2id recommendation: 19 MiB of memory, 2 iterations, 1 lane. */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

/**
 * argon2id hashing. `verifyDummy` runs a real verification against a hash of a random secret made
 * once at start-up, so "no such user" costs what "wrong password" costs.
 */
export async function createPasswordHasher(): Promise<PasswordHasher> {
  const dummyHash = await argon2.hash(randomBytes(32).toString('base64url'), ARGON2_OPTIONS);
  return {
    hash: (password) => argon2.hash(password, ARGON2_OPTIONS),
    verify: (hash, password) => argon2.verify(hash, password),
    async verifyDummy(password) {
      await argon2.verify(dummyHash, password);
    },
    needsRehash: (hash) => argon2.needsRehash(hash, ARGON2_OPTIONS),
  };
}
