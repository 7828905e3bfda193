import { isEmailAddress, MAX_USER_NAME, normaliseEmail } from '@halo/kit/domain';
import { forbidden, unauthenticated } from '@halo/kit/errors';

/** Who the provider says signed in, after the id_token was verified. */
export interface OAuthIdentity {
  provider: string;
  /** The provider's `sub`: stable per provider, unlike the email. */
  subject: string;
  /** Verified by the provider (email_verified), normalised like every email in Halo. */
  email: string;
  name: string;
}

/**
 * What a verified id_token says about the user: 403 unless it carries a verified email that Halo
 * accepts as an address (the kit's rule, the one content applies when the user is created).
 */
export function identityFromClaims(provider: string, claims: Record<string, unknown>): OAuthIdentity {
  const { sub, email, email_verified: verified, name } = claims;
  if (typeof sub !== 'string' || !sub) throw unauthenticated('Invalid id_token');
  const address = typeof email === 'string' ? normaliseEmail(email) : '';
  // A few providers send the boolean as a string.
  if (!isEmailAddress(address) || (verified !== true && verified !== 'true')) throw forbidden('Email not verified');
  const display = typeof name === 'string' && name.trim() ? name.trim() : address.split('@')[0]!;
  return { provider, subject: sub, email: address, name: display.slice(0, MAX_USER_NAME) };
}
