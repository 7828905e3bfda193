import { CLIENT_OPERATIONS_SCOPE } from '@halo/kit/auth';
import { z } from '@halo/kit/config';
import { emailAddress, MAX_USER_NAME, requiredText, userName } from '@halo/kit/domain';
import { defineRestManifest, pathId, ruleField } from '@halo/kit/rest';
import {
  AUTH_IDS,
  loginInput,
  MAX_API_KEY_NAME,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  parseScopes,
  passwordPolicy,
  SCOPES,
} from '../domain/rules';
import { INVALID_CREDENTIALS, TOO_MANY_ATTEMPTS } from '../domain/tokens';

/**
 * auth's public REST routes (gateway route table and OpenAPI are composed from this file by
 * `npm run compose`). Field checks call the domain's and the kit's own rules, so a 400 reads the
 * same here and there. The OAuth routes' handlers are src/rest/oauth-routes.ts's (the callback's
 * query is judged by the flow, domain/oauth.ts, which owns those answers).
 */

const token = z.object({ token: z.string(), accessToken: z.string().meta({ description: 'The same JWT as `token`' }) });
const profile = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string(),
  avatar: z.string().nullable(),
  role: z.enum(['user', 'admin']),
  created_at: z.iso.datetime(),
});
/** A scope of SCOPES, or `operations:write:<client>` for one client app (a pattern: client names are the teams'). */
const scope = z.union([z.enum(SCOPES), z.string().regex(CLIENT_OPERATIONS_SCOPE)]);
const SCOPE_JSON = {
  anyOf: [
    { type: 'string', enum: [...SCOPES] },
    { type: 'string', pattern: CLIENT_OPERATIONS_SCOPE.source },
  ],
};
const apiKey = z.object({
  id: z.number().int(),
  name: z.string(),
  prefix: z.string(),
  scopes: z.array(scope),
  created_at: z.iso.datetime(),
  last_used_at: z.iso.datetime().nullable(),
  revoked: z.boolean(),
  revoked_at: z.iso.datetime().nullable(),
});

const email = { type: 'string', format: 'email', maxLength: 254 };
const password = (doc: Record<string, unknown>) => ({ type: 'string', format: 'password', ...doc });
/** Login checks presence only (the domain's rule, judged with the other member present). */
const loginEmail = ruleField((v) => loginInput({ email: v, password: 'p' }), email);
const loginPassword = ruleField((v) => loginInput({ email: 'e@x.example', password: v }), password({ minLength: 1 }));

const FORBIDDEN_CROSS_SITE = { description: '`Forbidden`: a cross-site request (Sec-Fetch-Site or Origin)' };
const REFRESH_COOKIE = 'Sets `refresh_token` (HttpOnly, Secure, SameSite=Strict, Path=/auth, 30 days)';
const CLEARED_REFRESH_COOKIE = 'Clears `refresh_token` (Max-Age=0)';
const STATE_COOKIE = 'Sets `oauth_state` (HttpOnly, Secure, SameSite=Lax, Path=/auth/oauth): the flow, checked by the callback';
const KEY_MANAGER = { description: '`Forbidden`: API keys are managed by admins with their own token (not with an API key)' };

/**
 * A callback parameter, documented here and judged by the flow (domain/oauth.ts), which owns the
 * answers: a repeated or missing `state` is `Invalid state`, a missing `code` `code is required`.
 */
const flowParam = z.unknown().optional().meta({ type: 'string' });

export const restManifest = defineRestManifest({
  service: 'auth',
  description: 'Accounts, access and refresh tokens, API keys, OAuth 2.0 / OIDC login',
  routes: [
    {
      id: 'register',
      method: 'POST',
      path: '/auth/register',
      summary: 'Create an account',
      body: z.object({
        name: ruleField(userName, { type: 'string', minLength: 1, maxLength: MAX_USER_NAME, pattern: '\\S' }),
        email: ruleField(emailAddress, email),
        password: ruleField(passwordPolicy, password({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH })),
      }),
      responses: {
        201: {
          description: 'The new user',
          location: 'The user’s own resource: `/profile` (read with the user’s token; the API has no `/users/<id>`)',
          schema: z.object({ user: z.object({ id: z.number().int(), name: z.string(), email: z.string() }) }),
        },
        409: { description: '`Email already registered`' },
      },
    },
    {
      id: 'login',
      method: 'POST',
      path: '/auth/login',
      summary: 'Log in: an access token, and a refresh cookie',
      description: REFRESH_COOKIE,
      setsCookie: REFRESH_COOKIE,
      body: z.object({ email: loginEmail, password: loginPassword }),
      responses: {
        200: { description: 'Tokens and the user', schema: token.extend({ user: z.object({ id: z.number().int(), name: z.string() }) }) },
        // The domain's own messages: the document says what the service answers.
        401: { description: `\`${INVALID_CREDENTIALS}\` (the same for an unknown email and a wrong password)` },
        403: FORBIDDEN_CROSS_SITE,
        429: { description: `\`${TOO_MANY_ATTEMPTS}\`, with \`Retry-After\`` },
      },
    },
    {
      id: 'refresh',
      method: 'POST',
      path: '/auth/refresh',
      summary: 'A new access token for the refresh cookie (which is rotated)',
      description: `${REFRESH_COOKIE}. Presenting an already-rotated token revokes its whole family.`,
      setsCookie: `${REFRESH_COOKIE} (the rotated token)`,
      responses: {
        200: { description: 'Tokens', schema: token },
        401: { description: '`Invalid refresh token`' },
        403: FORBIDDEN_CROSS_SITE,
      },
    },
    {
      id: 'logout',
      method: 'POST',
      path: '/auth/logout',
      summary: 'Forget the refresh token and clear its cookie',
      setsCookie: CLEARED_REFRESH_COOKIE,
      responses: { 204: { description: 'Logged out' }, 403: FORBIDDEN_CROSS_SITE },
    },
    {
      id: 'profile',
      method: 'GET',
      path: '/profile',
      summary: 'The caller’s profile',
      auth: 'required',
      scope: 'profile:read',
      responses: { 200: { description: 'The profile (never a password or a hash)', schema: profile } },
    },
    {
      id: 'listApiKeys',
      method: 'GET',
      path: '/auth/api-keys',
      summary: 'The caller’s API keys (revoked ones marked)',
      auth: 'required',
      responses: { 200: { description: 'The keys, never the key itself', schema: z.object({ data: z.array(apiKey) }) }, 403: KEY_MANAGER },
    },
    {
      id: 'createApiKey',
      method: 'POST',
      path: '/auth/api-keys',
      summary: 'Create an API key (shown once)',
      auth: 'required',
      body: z.object({
        name: ruleField((v) => requiredText(v, 'name', MAX_API_KEY_NAME), {
          type: 'string',
          minLength: 1,
          maxLength: MAX_API_KEY_NAME,
          pattern: '\\S',
        }),
        scopes: ruleField(parseScopes, { type: 'array', items: SCOPE_JSON, minItems: 1 }),
      }),
      responses: {
        201: {
          description: 'The key; `key` is never shown again',
          location: 'The key: `/auth/api-keys/<id>` (what `DELETE` revokes)',
          schema: z.object({
            data: apiKey.pick({ id: true, name: true, prefix: true, scopes: true, created_at: true }).extend({ key: z.string() }),
          }),
        },
        403: KEY_MANAGER,
      },
    },
    {
      id: 'revokeApiKey',
      method: 'DELETE',
      path: '/auth/api-keys/:id',
      summary: 'Revoke an API key',
      auth: 'required',
      params: z.object({ id: pathId(AUTH_IDS) }),
      responses: { 204: { description: 'Revoked' }, 403: KEY_MANAGER, 404: { description: '`Not found`' } },
    },
    {
      id: 'oauthStart',
      method: 'GET',
      path: '/auth/oauth/:provider/start',
      summary: 'Start an OAuth 2.0 / OIDC login (PKCE, state, nonce)',
      params: z.object({ provider: z.string().meta({ description: 'A configured provider (`dev` in the embedded mode)' }) }),
      setsCookie: STATE_COOKIE,
      responses: {
        302: { description: 'To the provider', location: 'The provider’s authorization endpoint' },
        404: { description: '`Not found`: no such provider' },
      },
    },
    {
      id: 'oauthCallback',
      method: 'GET',
      path: '/auth/oauth/:provider/callback',
      summary: 'The provider’s redirect back: answers like login',
      description: `${REFRESH_COOKIE}; clears \`oauth_state\` whatever the answer.`,
      setsCookie: `${REFRESH_COOKIE}; clears \`oauth_state\``,
      params: z.object({ provider: z.string() }),
      query: z.object({ code: flowParam, state: flowParam, error: flowParam }),
      responses: {
        200: {
          description: 'Tokens and the user, as login',
          schema: token.extend({ user: z.object({ id: z.number().int(), name: z.string() }) }),
        },
        400: { description: '`Invalid state`, `code is required`, or the provider’s error' },
      },
    },
  ],
});
