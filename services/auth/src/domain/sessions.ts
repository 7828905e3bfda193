import { randomUUID } from 'node:crypto';
import type { User } from '@halo/kit/domain';
import { isHaloError, unauthenticated } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import type { UserDirectory } from './accounts';
import type { TokenSigner } from './api-keys';
import { INVALID_REFRESH_TOKEN, refreshDecision, sha256Hex, type RotateResult, type StoredRefreshToken } from './tokens';

/** Refresh-token families in storage; tokens arrive here already hashed. */
export interface RefreshTokenRepo {
  insertRefreshToken(t: { tokenHash: string; familyId: string; userId: number; expiresAt: Date }): Promise<void>;
  /** A read without a lock, to learn whose token it is before rotating it. */
  refreshToken(tokenHash: string): Promise<StoredRefreshToken | null>;
  /** Exchanges a token for the next one of its family atomically; a second exchange of the same token is reuse. */
  rotateRefreshToken(tokenHash: string, nextHash: string, now: Date): Promise<RotateResult>;
  revokeFamily(familyId: string): Promise<void>;
  deleteFamilyOf(tokenHash: string): Promise<number>;
}

/** A session as issued: the access token (JWT) and the refresh token the client keeps for later. */
export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  /** How long the refresh token lives: the family's absolute expiry, from now. */
  refreshTtlSeconds: number;
}

const DAY_MS = 86_400_000;

/**
 * Sessions: an access token plus a rotating refresh token. A login starts a token family with an
 * absolute expiry; each refresh replaces the token by the next one of its family (same expiry);
 * presenting a replaced token again means two parties hold the family, so it is revoked. How the
 * refresh token travels (an HttpOnly cookie) is the HTTP adapter's business, not this one's.
 */
export class Sessions {
  constructor(
    private readonly deps: {
      repo: RefreshTokenRepo;
      users: UserDirectory;
      sign: TokenSigner;
      accessTokenTtlSeconds: number;
      refreshTokenTtlDays: number;
      logger: Logger;
    },
  ) {}

  /** A new session (a new token family) for a user who just proved who they are: password or OAuth login. */
  async start(user: Pick<User, 'id' | 'name' | 'role'>): Promise<IssuedTokens> {
    const refreshToken = randomUUID();
    await this.deps.repo.insertRefreshToken({
      tokenHash: sha256Hex(refreshToken),
      familyId: randomUUID(),
      userId: user.id,
      expiresAt: new Date(Date.now() + this.deps.refreshTokenTtlDays * DAY_MS),
    });
    return { accessToken: this.accessToken(user), refreshToken, refreshTtlSeconds: this.deps.refreshTokenTtlDays * 86_400 };
  }

  /** Rotates a refresh token: a fresh access token and the family's next refresh token. 401 for anything else. */
  async refresh(token: string | null): Promise<IssuedTokens> {
    const { repo, users, logger } = this.deps;
    if (!token) throw unauthenticated(INVALID_REFRESH_TOKEN);
    const hash = sha256Hex(token);
    const now = new Date();
    // Whose token is it? Looked up before the rotation, so no lock is held during the gRPC call.
    const seen = await repo.refreshToken(hash);
    const decision = refreshDecision(seen, now);
    if (!seen || decision === 'invalid') throw unauthenticated(INVALID_REFRESH_TOKEN);
    if (decision === 'reuse') {
      await repo.revokeFamily(seen.familyId);
      logger.warn({ userId: seen.userId, familyId: seen.familyId }, 'refresh token reused; family revoked');
      throw unauthenticated(INVALID_REFRESH_TOKEN);
    }
    let user: User;
    try {
      user = await users.byId(seen.userId);
    } catch (err) {
      if (!isHaloError(err) || err.kind !== 'NOT_FOUND') throw err;
      await repo.revokeFamily(seen.familyId);
      throw unauthenticated(INVALID_REFRESH_TOKEN);
    }
    const next = randomUUID();
    const rotated = await repo.rotateRefreshToken(hash, sha256Hex(next), now);
    if (rotated.kind !== 'rotated') {
      if (rotated.kind === 'reuse')
        logger.warn({ userId: seen.userId, familyId: rotated.familyId }, 'refresh token reused; family revoked');
      throw unauthenticated(INVALID_REFRESH_TOKEN);
    }
    return {
      accessToken: this.accessToken(user),
      refreshToken: next,
      refreshTtlSeconds: (rotated.expiresAt.getTime() - Date.now()) / 1000,
    };
  }

  /** Ends the session the token belongs to (its whole family); an unknown or missing token is fine. */
  async end(token: string | null): Promise<void> {
    if (token) await this.deps.repo.deleteFamilyOf(sha256Hex(token));
  }

  private accessToken(user: Pick<User, 'id' | 'name' | 'role'>): string {
    return this.deps.sign({ sub: String(user.id), name: user.name, role: user.role }, this.deps.accessTokenTtlSeconds);
  }
}
