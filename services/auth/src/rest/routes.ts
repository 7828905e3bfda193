import { Router, type Request } from 'express';
import type { User } from '@halo/kit/domain';
import { mountRestRoutes, type RestCaller, type RestHandler } from '@halo/kit/rest';
import type { Accounts } from '../domain/accounts';
import type { ApiKeyRecord, ApiKeys } from '../domain/api-keys';
import { TooManyAttempts } from '../domain/tokens';
import { clientAddress } from './client-address';
import { restManifest } from './manifest';
import { oauthHandlers, type OAuthRoutesOptions } from './oauth-routes';
import type { HttpSessions } from './sessions';

/** The caller's own user resource: what a registration creates, as a URL path. */
export const PROFILE_PATH = '/profile';
/** The API keys collection; a key is `/auth/api-keys/<id>` (what `DELETE` revokes). */
export const API_KEYS_PATH = '/auth/api-keys';

/** REST records use snake_case and integer ids (docs/api/conventions.md). Never a password or a hash. */
export const profileJson = (u: User) => ({
  id: u.id,
  name: u.name,
  email: u.email,
  avatar: u.avatar,
  role: u.role,
  created_at: u.createdAt,
});

/** An API key as listed: never the key, never its hash; revoked keys stay listed, marked. */
export const apiKeyJson = (k: ApiKeyRecord) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  created_at: k.createdAt,
  last_used_at: k.lastUsedAt,
  revoked: k.revokedAt !== null,
  revoked_at: k.revokedAt,
});

/** The handlers of src/rest/manifest.ts; ids arrive parsed, the caller verified once by the kit. */
export function restRoutes(deps: {
  accounts: Accounts;
  apiKeys: ApiKeys;
  sessions: HttpSessions;
  oauth: OAuthRoutesOptions;
  jwtSecret: string;
}): Router {
  const { accounts, apiKeys, sessions, oauth, jwtSecret } = deps;
  // Who comes before what: only a key manager learns whether a body or an id is valid. The domain checks again.
  const keyManager = (_req: Request, { caller }: RestCaller) => apiKeys.manager(caller());

  return mountRestRoutes(
    Router(),
    restManifest,
    {
      register: withRetryAfter(async (req, res, { body }) => {
        const user = await accounts.register(body, clientAddress(req));
        // The API's one user resource is the user's own profile (there is no `/users/:id`).
        res
          .status(201)
          .location(PROFILE_PATH)
          .json({ user: { id: user.id, name: user.name, email: user.email } });
      }),
      login: {
        // A cross-site login is 403 before its body is looked at.
        authorize: (req) => sessions.assertSameSite(req),
        handle: withRetryAfter(async (req, res, { body }) => {
          // The gateway's X-Forwarded-For only when its service token vouches for it (client-address.ts).
          const user = await accounts.login(body, clientAddress(req));
          await sessions.issueLogin(res, user);
        }),
      },
      refresh: (req, res) => sessions.refresh(req, res),
      logout: (req, res) => sessions.logout(req, res),
      profile: async (_req, res, { caller }) => {
        res.json(profileJson(await accounts.profile(caller())));
      },
      listApiKeys: async (_req, res, { caller }) => {
        res.json({ data: (await apiKeys.list(caller())).map(apiKeyJson) });
      },
      createApiKey: {
        authorize: keyManager,
        handle: async (_req, res, { body, caller }) => {
          const { record, key } = await apiKeys.create(caller(), body);
          const { id, name, prefix, scopes, created_at } = apiKeyJson(record);
          res.setHeader('Cache-Control', 'no-store');
          res.status(201).location(`${API_KEYS_PATH}/${id}`).json({ data: { id, name, prefix, scopes, created_at, key } });
        },
      },
      revokeApiKey: {
        // An anonymous caller gets 401 even for a malformed id.
        authorize: keyManager,
        handle: async (_req, res, { params, caller }) => {
          await apiKeys.revoke(caller(), params.id);
          res.status(204).end();
        },
      },
      ...oauthHandlers(oauth),
    },
    { jwtSecret },
  );
}

/** 429 answers carry `Retry-After`; the kit's error mapper writes the status and body. */
function withRetryAfter<R>(handler: RestHandler<R>): RestHandler<R> {
  return async (req, res, input) => {
    try {
      await handler(req, res, input);
    } catch (err) {
      if (err instanceof TooManyAttempts) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  };
}
