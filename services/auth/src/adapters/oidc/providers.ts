import { ConfigError, loadConfig, z } from '@halo/kit/config';
import { unauthenticated, unavailable, type HaloError } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import {
  allowInsecureRequests,
  AuthorizationResponseError,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  ClientError,
  ClientSecretBasic,
  ClientSecretPost,
  discovery,
  enableNonRepudiationChecks,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
  type ClientAuth,
  type Configuration,
} from 'openid-client';
import type { FlowSecrets, OpenIdProviders } from '../../domain/oauth';

/**
 * OAuth 2.0 / OIDC login, the auth service's side (docs/api/auth.md, "OAuth 2.0 / OpenID Connect login").
 *
 * - providers.ts (this file): which OpenID providers exist, from the environment, and their
 *   discovered metadata. `OAUTH_PROVIDERS=dev,google` plus, per provider, `OAUTH_<NAME>_ISSUER`,
 *   `_CLIENT_ID`, `_CLIENT_SECRET` and `_REDIRECT_URI` (all required). Discovery happens on first
 *   use, not at start-up (the dev provider may start after auth), and a failed discovery is retried
 *   by the next request.
 * - domain/oauth.ts: the authorization code flow with state, nonce and PKCE (S256). The per-flow secrets
 *   live server-side in `oauth_flows` (db/store.ts); a cookie binds the flow to the browser.
 * - domain/identities.ts: what a verified id_token says; domain/accounts.ts `signInWith`: which
 *   local user it is (the linked one, else by verified email) and the (provider, subject) link.
 * - rest/oauth-routes.ts: `GET /:provider/start` and `GET /:provider/callback`; what a verified
 *   identity becomes (the user, answered like /auth/login) is the service's `onLogin`.
 *
 * openid-client does the protocol work: it checks the authorization response (state, `iss`),
 * exchanges the code with the PKCE verifier, and verifies the id_token — signature against the
 * provider's JWKS (`enableNonRepudiationChecks`: the library skips it by default for a token that
 * came straight from the token endpoint over TLS, and the dev provider is plain http), iss, aud,
 * exp, iat and nonce.
 */

export interface OAuthProviderSettings {
  /** Lower-case name as it appears in the paths, e.g. `dev` in /auth/oauth/dev/start. */
  name: string;
  issuer: URL;
  clientId: string;
  clientSecret: string;
  /** Where the provider sends the browser back: this provider's public callback URL. */
  redirectUri: URL;
}

const NAME = /^[a-z][a-z0-9]{0,31}$/;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
export const isLoopback = (url: URL) => LOOPBACK_HOSTS.has(url.hostname);

/** https, or http on loopback only (the dev provider); anything else stops start-up. */
const endpointUrl = () =>
  z.url({ message: 'must be a URL' }).transform((value, ctx) => {
    const url = new URL(value);
    if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url))) return url;
    ctx.addIssue({ code: 'custom', message: 'must be an https URL (plain http only on loopback)' });
    return z.NEVER;
  });

/** The list of providers; each one's own variables are `oauthProviderShape(name)`. */
export const oauthProvidersShape = {
  OAUTH_PROVIDERS: z
    .string()
    .optional()
    .describe(
      'comma-separated OpenID Connect providers for OAuth login (`dev,google`); each needs its `OAUTH_<NAME>_*` variables. ' +
        '`npm start`: `dev`, its dev OpenID provider',
    ),
};

/** One provider's variables, `OAUTH_<NAME>_…` (all required once the provider is listed). */
export function oauthProviderShape(name: string) {
  const prefix = `OAUTH_${name.toUpperCase()}_`;
  const required = () => z.string({ message: 'is required' }).min(1, 'is required');
  return {
    [`${prefix}ISSUER`]: endpointUrl().describe(
      "the provider's issuer URL (its discovery document is read on first use): https, or plain http on loopback only",
    ),
    [`${prefix}CLIENT_ID`]: required().describe("auth's client id at the provider"),
    [`${prefix}CLIENT_SECRET`]: required().describe("auth's client secret at the provider"),
    [`${prefix}REDIRECT_URI`]: endpointUrl().describe(
      "where the provider sends the browser back: auth's public `…/auth/oauth/<name>/callback` URL",
    ),
  };
}

/** Reads and validates the provider settings; a missing or bad variable is a ConfigError naming it. */
export function parseOAuthProviders(env: Record<string, string | undefined> = process.env): OAuthProviderSettings[] {
  const names = (loadConfig(oauthProvidersShape, env).OAUTH_PROVIDERS ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const seen = new Set<string>();
  return names.map((name) => {
    if (!NAME.test(name) || seen.has(name)) {
      const why = seen.has(name) ? 'is listed twice' : 'must be letters and digits, starting with a letter';
      throw new ConfigError(`Invalid configuration: OAUTH_PROVIDERS: ${JSON.stringify(name)} ${why}`);
    }
    seen.add(name);
    const prefix = `OAUTH_${name.toUpperCase()}_`;
    const c = loadConfig(oauthProviderShape(name), env) as Record<string, unknown>;
    return {
      name,
      issuer: c[`${prefix}ISSUER`] as URL,
      clientId: c[`${prefix}CLIENT_ID`] as string,
      clientSecret: c[`${prefix}CLIENT_SECRET`] as string,
      redirectUri: c[`${prefix}REDIRECT_URI`] as URL,
    };
  });
}

export interface OAuthProvidersOptions {
  logger?: Logger;
  /** Per-request timeout for discovery, token and JWKS requests, in seconds. */
  timeoutSeconds?: number;
}

const SCOPE = 'openid email profile';

/**
 * The configured providers, each discovered lazily and at most once (retried after a failure):
 * the OpenID Connect half of the login flow (domain/oauth.ts holds its rules).
 */
export class OAuthProviders implements OpenIdProviders {
  private readonly byName: Map<string, OAuthProviderSettings>;
  private readonly discovered = new Map<string, Promise<Configuration>>();

  constructor(
    settings: readonly OAuthProviderSettings[],
    private readonly opts: OAuthProvidersOptions = {},
  ) {
    this.byName = new Map(settings.map((s) => [s.name, s]));
  }

  settings(name: string): OAuthProviderSettings | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  async authorizer(name: string): Promise<(flow: FlowSecrets) => Promise<URL>> {
    const settings = this.byName.get(name)!;
    const config = await this.configuration(name);
    return async ({ state, nonce, codeVerifier }) =>
      buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri.href,
        scope: SCOPE,
        state,
        nonce,
        code_challenge: await calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      });
  }

  async exchange(name: string, callbackUrl: URL, flow: FlowSecrets): Promise<Record<string, unknown> | undefined> {
    const settings = this.byName.get(name)!;
    const config = await this.configuration(name);
    const currentUrl = new URL(settings.redirectUri.href);
    currentUrl.search = callbackUrl.search;
    try {
      const tokens = await authorizationCodeGrant(config, currentUrl, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      return tokens.claims();
    } catch (err) {
      // A signing key we have not seen: the provider may have rotated its keys. Discover afresh next time.
      if (err instanceof ClientError && err.code === 'OAUTH_KEY_SELECTION_FAILED') this.forget(name);
      const mapped = grantFailure(err);
      this.opts.logger?.warn({ provider: name, status: mapped?.httpStatus ?? 500, err: errorSummary(err) }, 'OAuth login failed');
      throw mapped ?? err;
    }
  }

  /** The provider's openid-client configuration; 503 `OAuth provider unavailable` while discovery fails. */
  configuration(name: string): Promise<Configuration> {
    const settings = this.byName.get(name);
    if (!settings) return Promise.reject(new Error(`unknown OAuth provider ${name}`));
    let pending = this.discovered.get(name);
    if (!pending) {
      pending = this.discover(settings);
      this.discovered.set(name, pending);
      // Forget a failure, so the next request tries again.
      const mine = pending;
      mine.catch(() => {
        if (this.discovered.get(name) === mine) this.discovered.delete(name);
      });
    }
    return pending;
  }

  /**
   * Drops the discovered configuration (and with it openid-client's JWKS cache), so the next use
   * discovers afresh: after the provider rotated its keys (the dev provider does on every restart).
   */
  forget(name: string): void {
    this.discovered.delete(name);
  }

  private async discover(s: OAuthProviderSettings): Promise<Configuration> {
    try {
      const config = await discovery(s.issuer, s.clientId, { client_secret: s.clientSecret }, clientAuth(s.clientSecret), {
        execute: isLoopback(s.issuer) ? [allowInsecureRequests, enableNonRepudiationChecks] : [enableNonRepudiationChecks],
        // A loopback provider is the embedded mode's dev one, which the launcher starts on this
        // very request (its first use): its answer may take the length of a Node start.
        timeout: this.opts.timeoutSeconds ?? (isLoopback(s.issuer) ? 30 : 10),
      });
      this.opts.logger?.info({ provider: s.name, issuer: s.issuer.href }, 'OAuth provider discovered');
      return config;
    } catch (err) {
      this.opts.logger?.warn({ provider: s.name, issuer: s.issuer.href, err: errorSummary(err) }, 'OAuth provider discovery failed');
      throw unavailable('OAuth provider unavailable');
    }
  }
}

/**
 * client_secret_post when the provider offers it (the spec's token request posts client_id and
 * client_secret), otherwise client_secret_basic, the OIDC default.
 */
function clientAuth(secret: string): ClientAuth {
  const post = ClientSecretPost(secret);
  const basic = ClientSecretBasic(secret);
  return (as, client, body, headers) =>
    (as.token_endpoint_auth_methods_supported?.includes('client_secret_post') ? post : basic)(as, client, body, headers);
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

/** An error's name, code and message, for logs: never its cause, which can hold tokens. */
export function errorSummary(err: unknown): { name?: string; code?: string; message?: string } {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | null;
  return {
    ...(typeof e?.name === 'string' ? { name: e.name } : {}),
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(typeof e?.message === 'string' ? { message: e.message } : {}),
  };
}

/** `OAUTH_PROVIDERS` and friends → the providers (none when the variable is empty or unset). */
export function loadOAuthProviders(
  env: Record<string, string | undefined> = process.env,
  opts: OAuthProvidersOptions = {},
): OAuthProviders {
  return new OAuthProviders(parseOAuthProviders(env), opts);
}
