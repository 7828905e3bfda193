import { createHash, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound, unauthenticated, unavailable, type HaloError, type Logger } from '@halo/kit';
import {
  AuthorizationResponseError,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  ClientError,
  randomNonce,
  randomPKCECodeVerifier,
  randomState,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
  type IDToken,
} from 'openid-client';
import { identityFromClaims, type OAuthIdentity } from '../domain/identities';
import { sha256Hex } from '../domain/tokens';
import { errorSummary, type OAuthProviders } from './providers';

/**
 * The authorization code flow (design: see providers.ts).
 *
 * start: fresh state, nonce and PKCE verifier (S256 challenge). The verifier, the nonce, the provider
 * and an expiry (10 minutes) are stored server-side in `oauth_flows` under sha256(state); the
 * browser gets the state twice — in the provider's redirect and in the `oauth_state` cookie
 * (HttpOnly, SameSite=Lax so that it rides along on the top-level redirect back from the provider,
 * Path=/auth/oauth) — which binds the flow to the browser that started it (login CSRF).
 *
 * callback: the query's state must equal the cookie's, and name a live flow of this provider; the
 * row is deleted on that first use, so a replayed callback finds nothing. Only then is a provider
 * error reported or the code exchanged. Failures: state → 400 `Invalid state`; provider error → 400;
 * token endpoint refusal (e.g. invalid_grant for a wrong PKCE verifier) → 401 `OAuth login failed`;
 * any id_token check (signature against the JWKS, iss, aud, exp, nonce) → 401 `Invalid id_token`;
 * no verified email → 403 `Email not verified`; provider unreachable → 503.
 */

export const FLOW_TTL_SECONDS = 600;
const SCOPE = 'openid email profile';

/** A login in progress, server-side (`oauth_flows`), keyed by the sha256 of its state. */
export interface OAuthFlowRepo {
  /** Saves a flow for `ttlSeconds`; abandoned flows are swept as new ones come. */
  insertOAuthFlow(f: { stateHash: string; provider: string; codeVerifier: string; nonce: string; ttlSeconds: number }): Promise<void>;
  /** Deletes the flow and answers it (first use wins, so a callback cannot be replayed), null when there is none. */
  takeOAuthFlow(stateHash: string): Promise<{ provider: string; codeVerifier: string; nonce: string; live: boolean } | null>;
}

export interface OAuthFlowsDeps {
  store: OAuthFlowRepo;
  providers: OAuthProviders;
  logger?: Logger;
}

export interface StartedFlow {
  /** The provider's authorization URL, for a 302. */
  redirectUrl: string;
  /** The state to bind to this browser (the adapter puts it in the `oauth_state` cookie). */
  state: string;
}

const invalidState = () => badRequest('Invalid state');

export class OAuthFlows {
  constructor(private readonly deps: OAuthFlowsDeps) {}

  /** Unknown provider → 404; provider unreachable → 503. */
  async start(provider: string): Promise<StartedFlow> {
    const settings = this.deps.providers.settings(provider);
    if (!settings) throw notFound();
    const config = await this.deps.providers.configuration(provider);
    const state = randomState();
    const nonce = randomNonce();
    const codeVerifier = randomPKCECodeVerifier();
    await this.deps.store.insertOAuthFlow({ stateHash: sha256Hex(state), provider, codeVerifier, nonce, ttlSeconds: FLOW_TTL_SECONDS });
    const url = buildAuthorizationUrl(config, {
      redirect_uri: settings.redirectUri.href,
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { redirectUrl: url.href, state };
  }

  /**
   * `callbackUrl` is the URL the browser came back on; only its query is used, on top of the
   * registered redirect_uri (which the token request must repeat exactly, whatever host or proxy
   * the request came through).
   */
  async callback(provider: string, callbackUrl: URL, cookieState: string | undefined): Promise<OAuthIdentity> {
    const settings = this.deps.providers.settings(provider);
    if (!settings) throw notFound();
    const query = callbackUrl.searchParams;
    const state = query.getAll('state').length === 1 ? query.get('state') : null;
    if (!state || !cookieState || !sameString(state, cookieState)) throw invalidState();

    const flow = await this.deps.store.takeOAuthFlow(sha256Hex(state));
    if (!flow || !flow.live || flow.provider !== provider) throw invalidState();

    const error = query.get('error');
    if (error) {
      const code = /^[\w.-]{1,64}$/.test(error) ? error : 'unknown_error';
      throw badRequest(`OAuth provider returned an error: ${code}`);
    }
    if (!query.get('code')) throw badRequest('code is required');

    const config = await this.deps.providers.configuration(provider);
    const currentUrl = new URL(settings.redirectUri.href);
    currentUrl.search = callbackUrl.search;
    let claims: IDToken | undefined;
    try {
      const tokens = await authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (err) {
      // A signing key we have not seen: the provider may have rotated its keys. Discover afresh next time.
      if (err instanceof ClientError && err.code === 'OAUTH_KEY_SELECTION_FAILED') this.deps.providers.forget(provider);
      const mapped = grantFailure(err);
      this.deps.logger?.warn({ provider, status: mapped?.httpStatus ?? 500, err: errorSummary(err) }, 'OAuth login failed');
      throw mapped ?? err;
    }
    if (!claims) throw unauthenticated('Invalid id_token');
    return identityFromClaims(provider, claims);
  }
}

/** Maps an openid-client failure during the code exchange to the contract's answer (null: a bug, 500). */
function grantFailure(err: unknown): HaloError | null {
  // The token endpoint (or the authorization response) said no: invalid_grant, invalid_client, ...
  if (err instanceof ResponseBodyError || err instanceof WWWAuthenticateChallengeError || err instanceof AuthorizationResponseError) {
    return unauthenticated('OAuth login failed');
  }
  if (err instanceof ClientError) {
    if (err.code === 'OAUTH_TIMEOUT' || err.code === 'OAUTH_ABORT') return unavailable('OAuth provider unavailable');
    if (err.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || err.code === 'OAUTH_RESPONSE_IS_NOT_JSON') {
      return unauthenticated('OAuth login failed');
    }
    // Everything else is the response failing verification: the id_token's signature, claims, alg.
    return unauthenticated('Invalid id_token');
  }
  // fetch() itself failed: the provider is unreachable.
  if (err instanceof TypeError && /fetch failed/i.test(err.message)) return unavailable('OAuth provider unavailable');
  return null;
}

function sameString(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}
