import type { Db, Queryable } from '@halo/kit/db';
import type { CredentialRepo, IdentityRepo } from '../domain/accounts';
import type { ApiKeyRecord, ApiKeyRepo } from '../domain/api-keys';
import type { OAuthIdentity } from '../domain/identities';
import type { RefreshTokenRepo } from '../domain/sessions';
import { refreshDecision, type RotateResult, type StoredRefreshToken } from '../domain/tokens';
import type { OAuthFlowRepo } from '../domain/oauth';

interface RefreshRow {
  family_id: string;
  user_id: number;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}
interface ApiKeyRow {
  id: number;
  owner_id: number;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const toRefresh = (r: RefreshRow): StoredRefreshToken => ({
  familyId: r.family_id,
  userId: r.user_id,
  expiresAt: r.expires_at,
  rotatedAt: r.rotated_at,
  revokedAt: r.revoked_at,
});
const toApiKey = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  ownerId: r.owner_id,
  name: r.name,
  prefix: r.prefix,
  scopes: r.scopes,
  createdAt: r.created_at.toISOString(),
  lastUsedAt: iso(r.last_used_at),
  revokedAt: iso(r.revoked_at),
});

const REFRESH_COLS = 'family_id, user_id, expires_at, rotated_at, revoked_at';
const API_KEY_COLS = 'id, owner_id, name, prefix, scopes, created_at, last_used_at, revoked_at';

/** Every SQL statement of the auth service (parameterised; secrets arrive here already hashed). */
export class AuthStore implements CredentialRepo, RefreshTokenRepo, ApiKeyRepo, IdentityRepo, OAuthFlowRepo {
  constructor(private readonly db: Db) {}

  // ── credentials ──

  async passwordHash(userId: number): Promise<string | null> {
    const { rows } = await this.db.query<{ password_hash: string }>('SELECT password_hash FROM credentials WHERE user_id = $1', [userId]);
    return rows[0]?.password_hash ?? null;
  }

  async insertCredentials(userId: number, passwordHash: string): Promise<void> {
    await this.db.query('INSERT INTO credentials (user_id, password_hash) VALUES ($1, $2)', [userId, passwordHash]);
  }

  /** The seed's insert: a user who already has a password keeps it. */
  async insertCredentialsIfMissing(userId: number, passwordHash: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'INSERT INTO credentials (user_id, password_hash) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING',
      [userId, passwordHash],
    );
    return rowCount > 0;
  }

  async hasCredentials(userIds: readonly number[]): Promise<Set<number>> {
    const { rows } = await this.db.query<{ user_id: number }>('SELECT user_id FROM credentials WHERE user_id = ANY($1::bigint[])', [
      userIds,
    ]);
    return new Set(rows.map((r) => r.user_id));
  }

  async updatePasswordHash(userId: number, passwordHash: string): Promise<void> {
    await this.db.query('UPDATE credentials SET password_hash = $2, updated_at = now() WHERE user_id = $1', [userId, passwordHash]);
  }

  // ── refresh tokens ──

  async insertRefreshToken(t: { tokenHash: string; familyId: string; userId: number; expiresAt: Date }): Promise<void> {
    await this.db.query('INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) VALUES ($1, $2, $3, $4)', [
      t.tokenHash,
      t.familyId,
      t.userId,
      t.expiresAt,
    ]);
  }

  /** A read without a lock, to learn whose token it is before the rotation transaction. */
  async refreshToken(tokenHash: string): Promise<StoredRefreshToken | null> {
    const { rows } = await this.db.query<RefreshRow>(`SELECT ${REFRESH_COLS} FROM refresh_tokens WHERE token_hash = $1`, [tokenHash]);
    return rows[0] ? toRefresh(rows[0]) : null;
  }

  /**
   * Exchanges a refresh token for the next one of its family, in one transaction with the row
   * locked, so two concurrent refreshes with the same token cannot both rotate it: the second
   * waits, then sees it rotated, which is reuse. The next token keeps the family's expiry.
   */
  async rotateRefreshToken(tokenHash: string, nextHash: string, now: Date): Promise<RotateResult> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<RefreshRow>(`SELECT ${REFRESH_COLS} FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE`, [
        tokenHash,
      ]);
      const row = rows[0] ? toRefresh(rows[0]) : null;
      const decision = refreshDecision(row, now);
      if (decision === 'invalid' || !row) return { kind: 'invalid' } as const;
      if (decision === 'reuse') {
        await this.revokeFamilyIn(tx, row.familyId);
        return { kind: 'reuse', familyId: row.familyId } as const;
      }
      await tx.query('UPDATE refresh_tokens SET rotated_at = now() WHERE token_hash = $1', [tokenHash]);
      await tx.query('INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) VALUES ($1, $2, $3, $4)', [
        nextHash,
        row.familyId,
        row.userId,
        row.expiresAt,
      ]);
      return { kind: 'rotated', userId: row.userId, expiresAt: row.expiresAt } as const;
    });
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.revokeFamilyIn(this.db, familyId);
  }

  private async revokeFamilyIn(q: Queryable, familyId: string): Promise<void> {
    await q.query('UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL', [familyId]);
  }

  /** Logout: the session (the token's whole family) is deleted, so no token of it works again. */
  async deleteFamilyOf(tokenHash: string): Promise<number> {
    const { rowCount } = await this.db.query(
      'DELETE FROM refresh_tokens WHERE family_id = (SELECT family_id FROM refresh_tokens WHERE token_hash = $1)',
      [tokenHash],
    );
    return rowCount;
  }

  /** Families past their expiry are useless (every token of a family shares it). */
  async purgeExpiredRefreshTokens(): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM refresh_tokens WHERE expires_at < now()');
    return rowCount;
  }

  // ── API keys ──

  async insertApiKey(k: { ownerId: number; name: string; prefix: string; keyHash: string; scopes: readonly string[] }) {
    const { rows } = await this.db.query<ApiKeyRow>(
      `INSERT INTO api_keys (owner_id, name, prefix, key_hash, scopes) VALUES ($1, $2, $3, $4, $5::text[])
       RETURNING ${API_KEY_COLS}`,
      [k.ownerId, k.name, k.prefix, k.keyHash, k.scopes],
    );
    return toApiKey(rows[0]!);
  }

  async apiKeysOf(ownerId: number): Promise<ApiKeyRecord[]> {
    const { rows } = await this.db.query<ApiKeyRow>(`SELECT ${API_KEY_COLS} FROM api_keys WHERE owner_id = $1 ORDER BY id`, [ownerId]);
    return rows.map(toApiKey);
  }

  /** Revokes one of the owner's keys (again: no change); false when there is no such key of theirs. */
  async revokeApiKey(id: number, ownerId: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 AND owner_id = $2',
      [id, ownerId],
    );
    return rowCount > 0;
  }

  async activeApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const { rows } = await this.db.query<ApiKeyRow>(`SELECT ${API_KEY_COLS} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, [
      keyHash,
    ]);
    return rows[0] ? toApiKey(rows[0]) : null;
  }

  async touchApiKey(id: number): Promise<void> {
    await this.db.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [id]);
  }

  // ── OAuth login ──

  async insertOAuthFlow(f: {
    stateHash: string;
    provider: string;
    codeVerifier: string;
    nonce: string;
    ttlSeconds: number;
  }): Promise<void> {
    // Abandoned flows go as new ones come (the index on expires_at keeps this cheap).
    await this.db.query('DELETE FROM oauth_flows WHERE expires_at < now()');
    await this.db.query(
      `INSERT INTO oauth_flows (state_hash, provider, code_verifier, nonce, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
      [f.stateHash, f.provider, f.codeVerifier, f.nonce, f.ttlSeconds],
    );
  }

  async takeOAuthFlow(stateHash: string): Promise<{ provider: string; codeVerifier: string; nonce: string; live: boolean } | null> {
    const { rows } = await this.db.query<{ provider: string; code_verifier: string; nonce: string; live: boolean }>(
      `DELETE FROM oauth_flows WHERE state_hash = $1
       RETURNING provider, code_verifier, nonce, expires_at > now() AS live`,
      [stateHash],
    );
    const r = rows[0];
    return r ? { provider: r.provider, codeVerifier: r.code_verifier, nonce: r.nonce, live: r.live } : null;
  }

  /** The local user linked to a provider account, or null. */
  async userIdForIdentity(provider: string, subject: string): Promise<number | null> {
    const { rows } = await this.db.query<{ user_id: number }>('SELECT user_id FROM oauth_identities WHERE provider = $1 AND subject = $2', [
      provider,
      subject,
    ]);
    return rows[0]?.user_id ?? null;
  }

  /** Links a provider account to a local user, or updates the link (a new user id, the current email). */
  async linkIdentity(identity: OAuthIdentity, userId: number): Promise<void> {
    await this.db.query(
      `INSERT INTO oauth_identities (provider, subject, user_id, email) VALUES ($1, $2, $3, $4)
       ON CONFLICT (provider, subject) DO UPDATE SET user_id = EXCLUDED.user_id, email = EXCLUDED.email`,
      [identity.provider, identity.subject, userId, identity.email],
    );
  }
}
