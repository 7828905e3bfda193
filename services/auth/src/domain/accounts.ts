import { conflict, isHaloError, normaliseEmail, requireCaller, requireScope, unauthenticated, type Caller, type Logger } from '@halo/kit';
import { loginInput, registration, type User } from './rules';
import { INVALID_CREDENTIALS } from './tokens';

/** Content's users, over gRPC (content owns them; auth never stores a name or an email). */
export interface UserDirectory {
  /** NOT_FOUND when unknown. */
  byId(id: number, requestId: string): Promise<User>;
  /** null when unknown; `deadlineMs` overrides the usual deadline (the start-up seed waits longer). */
  byEmail(email: string, requestId: string, deadlineMs?: number): Promise<User | null>;
  /** CONFLICT when the email is taken. */
  create(input: { name: string; email: string }, requestId: string): Promise<User>;
  delete(id: number, requestId: string): Promise<void>;
}

export interface CredentialRepo {
  passwordHash(userId: number): Promise<string | null>;
  insertCredentials(userId: number, passwordHash: string): Promise<void>;
  updatePasswordHash(userId: number, passwordHash: string): Promise<void>;
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

/** The account use cases, once for every transport. */
export class Accounts {
  constructor(
    private readonly deps: {
      users: UserDirectory;
      credentials: CredentialRepo;
      passwords: PasswordHasher;
      limiter: LoginLimiter;
      logger: Logger;
    },
  ) {}

  /**
   * Creates the user in content, then their credentials here. If the second step fails the user is
   * deleted again (compensation), so a failed registration leaves nothing half-written.
   */
  async register(body: unknown, requestId: string): Promise<User> {
    const input = registration(body);
    // Hash first: nothing to undo if it fails, and the window between the two writes stays short.
    const hash = await this.deps.passwords.hash(input.password);
    let user: User;
    try {
      user = await this.deps.users.create({ name: input.name, email: input.email }, requestId);
    } catch (err) {
      if (isHaloError(err) && err.kind === 'CONFLICT') throw conflict('Email already registered');
      throw err;
    }
    try {
      await this.deps.credentials.insertCredentials(user.id, hash);
    } catch (err) {
      await this.deps.users.delete(user.id, requestId).catch((undoErr: unknown) =>
        this.deps.logger.error({ err: undoErr, userId: user.id, requestId }, 'registration compensation failed: user left without credentials'),
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
  async login(body: unknown, ip: string, requestId: string): Promise<User> {
    const { email, password } = loginInput(body);
    await this.deps.limiter.before(email, ip);
    const user = await this.deps.users.byEmail(email, requestId);
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
  async profile(caller: Caller | null, requestId: string): Promise<User> {
    const c = this.me(caller);
    return this.deps.users.byId(c.id, requestId);
  }

  /** Who the caller is: 401 when anonymous, 403 for an API-key token without `profile:read`. */
  me(caller: Caller | null): Caller {
    return requireScope(requireCaller(caller), 'profile:read');
  }

  /**
   * For the OAuth login: the user with this (provider-verified) email, created without a password
   * when there is none. A concurrent sign-up of the same email ends with the user that won.
   */
  async findOrCreateUserByEmail(input: { email: string; name: string }, requestId: string): Promise<User> {
    const { users } = this.deps;
    const email = normaliseEmail(input.email);
    const existing = await users.byEmail(email, requestId);
    if (existing) return existing;
    try {
      return await users.create({ email, name: input.name.trim() || email.split('@')[0]! }, requestId);
    } catch (err) {
      if (!isHaloError(err) || err.kind !== 'CONFLICT') throw err;
      const winner = await users.byEmail(email, requestId);
      if (!winner) throw err;
      return winner;
    }
  }
}
