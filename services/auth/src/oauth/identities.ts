import type { Queryable } from '@halo/kit';

/** Who the provider says signed in, after the id_token was verified. */
export interface OAuthIdentity {
  provider: string;
  /** The provider's `sub`: stable per provider, unlike the email. */
  subject: string;
  /** Verified by the provider (email_verified), lower-cased. */
  email: string;
  name: string;
}

/**
 * Links a provider account to a local user, or updates the link (a new user id, the current email).
 * Deciding WHICH user is the caller's job (usually: `userIdForIdentity`, else by verified email).
 */
export async function linkIdentity(db: Queryable, identity: OAuthIdentity, userId: number): Promise<void> {
  await db.query(
    `INSERT INTO oauth_identities (provider, subject, user_id, email) VALUES ($1, $2, $3, $4)
     ON CONFLICT (provider, subject) DO UPDATE SET user_id = EXCLUDED.user_id, email = EXCLUDED.email`,
    [identity.provider, identity.subject, userId, identity.email.toLowerCase()],
  );
}

/** The local user linked to a provider account, or null. */
export async function userIdForIdentity(db: Queryable, provider: string, subject: string): Promise<number | null> {
  const { rows } = await db.query<{ user_id: number }>(
    'SELECT user_id FROM oauth_identities WHERE provider = $1 AND subject = $2',
    [provider, subject],
  );
  return rows[0]?.user_id ?? null;
}
