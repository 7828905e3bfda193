import { Router, type Request, type RequestHandler, type Response } from 'express';
import { callerFromHeader, route } from '@halo/kit';
import type { Accounts } from '../domain/accounts';
import type { ApiKeyRecord, ApiKeys } from '../domain/api-keys';
import { parseId, type User } from '../domain/rules';
import { TooManyAttempts } from '../domain/tokens';
import type { Sessions } from '../session';

/** REST records use snake_case and integer ids (CONTRACT.md). Never a password or a hash. */
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

export function restRoutes(deps: { accounts: Accounts; apiKeys: ApiKeys; sessions: Sessions; jwtSecret: string }): Router {
  const { accounts, apiKeys, sessions, jwtSecret } = deps;
  const caller = (req: Request) => callerFromHeader(req.headers.authorization, jwtSecret);
  const router = Router();

  route(router, '/auth/register', {
    post: async (req, res) => {
      const user = await accounts.register(req.body, req.id);
      res.status(201).json({ user: { id: user.id, name: user.name, email: user.email } });
    },
  });
  route(router, '/auth/login', {
    post: withRetryAfter(async (req, res) => {
      sessions.assertSameSite(req);
      // req.ip honours X-Forwarded-For from trusted proxies only (TRUST_PROXY), i.e. the gateway.
      const user = await accounts.login(req.body, req.ip ?? 'unknown', req.id);
      await sessions.issueLogin(res, user);
    }),
  });
  route(router, '/auth/refresh', { post: (req, res) => sessions.refresh(req, res) });
  route(router, '/auth/logout', { post: (req, res) => sessions.logout(req, res) });
  route(router, '/profile', {
    get: async (req, res) => {
      res.json(profileJson(await accounts.profile(caller(req), req.id)));
    },
  });
  route(router, '/auth/api-keys', {
    get: async (req, res) => {
      res.json({ data: (await apiKeys.list(caller(req))).map(apiKeyJson) });
    },
    post: async (req, res) => {
      const { record, key } = await apiKeys.create(caller(req), req.body);
      const { id, name, prefix, scopes, created_at } = apiKeyJson(record);
      res.setHeader('Cache-Control', 'no-store');
      res.status(201).json({ data: { id, name, prefix, scopes, created_at, key } });
    },
  });
  route(router, '/auth/api-keys/:id', {
    delete: async (req, res) => {
      // Who first: an anonymous caller gets 401 even for a malformed id.
      const who = caller(req);
      apiKeys.manager(who);
      await apiKeys.revoke(who, parseId(req.params.id));
      res.status(204).end();
    },
  });
  return router;
}

/** 429 answers carry `Retry-After`; the kit's error mapper writes the status and body. */
function withRetryAfter(handler: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return async (req, res) => {
    try {
      await handler(req, res);
    } catch (err) {
      if (err instanceof TooManyAttempts) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  };
}
