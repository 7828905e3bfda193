import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound, unauthenticated } from '@halo/kit/errors';
import { identityFromClaims, type OAuthIdentity } from './identities';
import { sha256Hex } from './tokens';

/**
 * The authorization code flow (design: see adapters/oidc/providers.ts).
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

/** A login in progress, server-side (`oauth_flows`), keyed by the sha256 of its state. */
export interface OAuthFlowRepo {
  /** Saves a flow for `ttlSeconds`; abandoned flows are swept as new ones come. */
  insertOAuthFlow(f: { stateHash: string; provider: string; codeVerifier: string; nonce: string; ttlSeconds: number }): Promise<void>;
  /** Deletes the flow and answers it (first use wins, so a callback cannot be replayed), null when there is none. */
  takeOAuthFlow(stateHash: string): Promise<{ provider: string; codeVerifier: string; nonce: string; live: boolean } | null>;
}

/** A flow's secrets: the state (CSRF), the nonce (id_token replay) and the PKCE verifier. */
export interface FlowSecrets {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/**
 * The OpenID providers, as the flow needs them (adapters/oidc/providers.ts speaks OpenID Connect:
 * discovery, the authorization URL, the code exchange and every id_token check).
 */
export interface OpenIdProviders {
  /** Whether `provider` is configured. */
  has(provider: string): boolean;
  /**
   * Discovers the provider (503 `OAuth provider unavailable` while it cannot), then answers the
   * function that builds its authorization URL for a flow (S256 challenge of the verifier).
   */
  authorizer(provider: string): Promise<(flow: FlowSecrets) => Promise<URL>>;
  /**
   * The code exchange for the query of `callbackUrl`, the id_token checked against the flow: its
   * claims (undefined without an id_token), or the contract's 401 (`OAuth login failed`,
   * `Invalid id_token`) or 503.
   */
  exchange(provider: string, callbackUrl: URL, flow: FlowSecrets): Promise<Record<string, unknown> | undefined>;
}

export interface OAuthFlowsDeps {
  store: OAuthFlowRepo;
  providers: OpenIdProviders;
}

export interface StartedFlow {
  /** The provider's authorization URL, for a 302. */
  redirectUrl: string;
  /** The state to bind to this browser (the adapter puts it in the `oauth_state` cookie). */
  state: string;
}

const invalidState = () => badRequest('Invalid state');

/** 32 random bytes, base64url: what openid-client's randomState/randomNonce/randomPKCECodeVerifier make. */
const randomToken = () => randomBytes(32).toString('base64url');

export class OAuthFlows {
  constructor(private readonly deps: OAuthFlowsDeps) {}

  /** Unknown provider → 404; provider unreachable → 503 (before any flow is stored). */
  async start(provider: string): Promise<StartedFlow> {
    if (!this.deps.providers.has(provider)) throw notFound();
    const authorizationUrl = await this.deps.providers.authorizer(provider);
    const flow: FlowSecrets = { state: randomToken(), nonce: randomToken(), codeVerifier: randomToken() };
    await this.deps.store.insertOAuthFlow({
      stateHash: sha256Hex(flow.state),
      provider,
      codeVerifier: flow.codeVerifier,
      nonce: flow.nonce,
      ttlSeconds: FLOW_TTL_SECONDS,
    });
    return { redirectUrl: (await authorizationUrl(flow)).href, state: flow.state };
  }

  /**
   * `callbackUrl` is the URL the browser came back on; only its query is used, on top of the
   * registered redirect_uri (which the token request must repeat exactly, whatever host or proxy
   * the request came through).
   */
  async callback(provider: string, callbackUrl: URL, cookieState: string | undefined): Promise<OAuthIdentity> {
    if (!this.deps.providers.has(provider)) throw notFound();
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

    const claims = await this.deps.providers.exchange(provider, callbackUrl, { state, nonce: flow.nonce, codeVerifier: flow.codeVerifier });
    if (!claims) throw unauthenticated('Invalid id_token');
    return identityFromClaims(provider, claims);
  }
}

function sameString(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}
