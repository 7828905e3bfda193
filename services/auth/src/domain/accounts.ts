import { requireCaller, type Caller } from '@halo/kit/auth';
import { normaliseEmail, type User } from '@halo/kit/domain';
import { conflict, isHaloError, unauthenticated } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import type { OAuthIdentity } from './identities';
import { loginInput, registration } from './rules';
import { INVALID_CREDENTIALS } from './tokens';

/** Content's users, over gRPC (content owns them; auth never stores a name or an email). */
export interface UserDirectory {
  /** NOT_FOUND when unknown. */
  byId(id: number): Promise<User>;
  /** null when unknown; `deadlineMs` overrides the usual deadline (the start-up seed waits longer). */
  byEmail(email: string, deadlineMs?: number): Promise<User | null>;
  /** CONFLICT when the email is taken. */
  create(input: { name: string; email: string }): Promise<User>;
  delete(id: number): Promise<void>;
}

export interface CredentialRepo {
  passwordHash(userId: number): Promise<string | null>;
  insertCredentials(userId: number, passwordHash: string): Promise<void>;
  updatePasswordHash(userId: number, passwordHash: string): Promise<void>;
}

/** Provider accounts linked to local users: (provider, subject) → user id. */
export interface IdentityRepo {
  userIdForIdentity(provider: string, subject: string): Promise<number | null>;
  linkIdentity(identity: OAuthIdentity, userId: number): Promise<void>;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hash: string, password: string): Promise<boolean>;
  /** Spends one verification's time against a fixed hash (for a user with no password). */
  verifyDummy(password: string): Promise<void>;
  /** True when a stored hash was made with weaker parameters than today's. */
  needsRehash(hash: string): boolean;
}

/** Failed-login counters. `before` throws 429 (blocked) or 503 (store down) and counts the attempt. */
export interface LoginLimiter {
  before(email: string, ip: string): Promise<void>;
  /** A correct password: the attempt did not fail, and the email's counter starts over. */
  succeeded(email: string, ip: string): Promise<void>;
}

/** Registrations per client address. `consume` throws 429 (over the limit) or 503 (store down). */
export interface RegistrationLimiter {
  consume(ip: string): Promise<void>;
}

/** The account use cases, once for every transport. */
export class Accounts {
  constructor(
    private readonly deps: {
      users: UserDirectory;
      credentials: CredentialRepo;
      identities: IdentityRepo;
      passwords: PasswordHasher;
      limiter: LoginLimiter;
      registrations: RegistrationLimiter;
      logger: Logger;
    },
  ) {}

  /**
   * Creates the user in content, then their credentials here. If the second step fails the user is
   * deleted again (compensation), so a failed registration leaves nothing half-written. A valid
   * request counts against its address's limit first (a mistyped form does not).
   */
  async register(body: unknown, ip: string): Promise<User> {
    const input = registration(body);
    await this.deps.registrations.consume(ip);
    // Hash first: nothing to undo if it fails, and the window between the two writes stays short.
    const hash = await this.deps.passwords.hash(input.password);
    let user: User;
    try {
      user = await this.deps.users.create({ name: input.name, email: input.email });
    } catch (err) {
      if (isHaloError(err) && err.kind === 'CONFLICT') throw conflict('Email already registered');
      throw err;
    }
    try {
      await this.deps.credentials.insertCredentials(user.id, hash);
    } catch (err) {
      await this.deps.users
        .delete(user.id)
        .catch((undoErr: unknown) =>
          this.deps.logger.error({ err: undoErr, userId: user.id }, 'registration compensation failed: user left without credentials'),
        );
      throw err;
    }
    return user;
  }

  /**
   * Checks an email and password. The limiter runs first, so a blocked caller learns nothing —
   * not even that the password was right. An unknown email costs one argon2 verification too, and
   * both failures give the same answer.
   */
  async login(body: unknown, ip: string): Promise<User> {
    const { email, password } = loginInput(body);
    await this.deps.limiter.before(email, ip);
    const user = await this.deps.users.byEmail(email);
    const hash = user ? await this.deps.credentials.passwordHash(user.id) : null;
    if (!user || !hash) {
      await this.deps.passwords.verifyDummy(password);
      throw unauthenticated(INVALID_CREDENTIALS);
    }
    if (!(await this.deps.passwords.verify(hash, password))) throw unauthenticated(INVALID_CREDENTIALS);
    await this.deps.limiter.succeeded(email, ip);
    if (this.deps.passwords.needsRehash(hash)) {
      const fresh = await this.deps.passwords.hash(password);
      await this.deps.credentials.updatePasswordHash(user.id, fresh);
    }
    return user;
  }

  /** The caller's own user. An API-key token needs scope `profile:read` (403 otherwise). */
  async profile(caller: Caller | null): Promise<User> {
    return this.deps.users.byId(this.me(caller).id);
  }

  /** Who the caller is: 401 when anonymous (an API key's `profile:read` is declared on `me` and `/profile`, held to by the kit). */
  me(caller: Caller | null): Caller {
    return requireCaller(caller);
  }

  /**
   * The OAuth login: the local user this provider account is linked to; on a first login (or when
   * that user is gone) the user with the provider-verified email, created without a password when
   * there is none. The link is then written, so later logins follow the provider's stable subject
   * even after the email at the provider changes.
   */
  async signInWith(identity: OAuthIdentity): Promise<User> {
    const linked = await this.deps.identities.userIdForIdentity(identity.provider, identity.subject);
    const user = (linked !== null && (await this.existingUser(linked))) || (await this.findOrCreateUserByEmail(identity));
    await this.deps.identities.linkIdentity(identity, user.id);
    return user;
  }

  private async existingUser(id: number): Promise<User | null> {
    try {
      return await this.deps.users.byId(id);
    } catch (err) {
      if (isHaloError(err) && err.kind === 'NOT_FOUND') return null;
      throw err;
    }
  }

  /** A concurrent sign-up of the same email ends with the user that won. */
  private async findOrCreateUserByEmail(input: { email: string; name: string }): Promise<User> {
    const { users } = this.deps;
    const email = normaliseEmail(input.email);
    const existing = await users.byEmail(email);
    if (existing) return existing;
    try {
      return await users.create({ email, name: input.name.trim() || email.split('@')[0]! });
    } catch (err) {
      if (!isHaloError(err) || err.kind !== 'CONFLICT') throw err;
      const winner = await users.byEmail(email);
      if (!winner) throw err;
      return winner;
    }
  }
}
