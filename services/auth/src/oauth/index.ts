export { clearedStateCookie, FLOW_TTL_SECONDS, identityFromClaims, OAuthFlows, OAUTH_COOKIE_PATH, OAUTH_STATE_COOKIE, stateCookie } from './flow';
export type { OAuthFlowsDeps, StartedFlow } from './flow';
export { linkIdentity, userIdForIdentity, type OAuthIdentity } from './identities';
export { loadOAuthProviders, OAuthProviders, parseOAuthProviders } from './providers';
export type { OAuthProviderSettings, OAuthProvidersOptions } from './providers';
export { oauthRoutes, type OAuthRoutesOptions } from './routes';
