import { Router, type Request, type Response } from 'express';
import { route } from '@halo/kit';
import type { OAuthIdentity } from '../domain/identities';
import type { OAuthFlows } from '../oauth/flow';
import { clearedStateCookie, cookieValue, OAUTH_STATE_COOKIE, stateCookie } from './cookies';

export interface OAuthRoutesOptions {
  flows: OAuthFlows;
  /** The state cookie's Secure flag: off only in the embedded dev mode over plain http. */
  cookieSecure: boolean;
  /**
   * Called with the verified identity; answers the request (the service links or creates the
   * local user and responds exactly like /auth/login). Its `Set-Cookie` must be appended
   * (express `res.cookie` does), not set, to keep the state cookie's removal.
   */
  onLogin(identity: OAuthIdentity, req: Request, res: Response): Promise<void>;
}

/**
 * `GET /:provider/start` and `GET /:provider/callback`, to mount at /auth/oauth (the state cookie's
 * Path). Errors go to the kit's errorHandler; an unknown provider is 404 `Not found`.
 */
export function oauthRoutes(opts: OAuthRoutesOptions): Router {
  const { flows, cookieSecure, onLogin } = opts;
  const router = Router();
  route(router, '/:provider/start', {
    get: async (req, res) => {
      const { redirectUrl, state } = await flows.start(String(req.params.provider));
      res.setHeader('Cache-Control', 'no-store');
      res.append('Set-Cookie', stateCookie(state, cookieSecure));
      res.redirect(302, redirectUrl);
    },
  });
  route(router, '/:provider/callback', {
    get: async (req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      // The flow is over whatever happens next: the cookie goes with the first answer.
      res.append('Set-Cookie', clearedStateCookie(cookieSecure));
      const callbackUrl = new URL(req.originalUrl, 'http://callback.invalid');
      const identity = await flows.callback(String(req.params.provider), callbackUrl, cookieValue(req.headers.cookie, OAUTH_STATE_COOKIE));
      await onLogin(identity, req, res);
    },
  });
  return router;
}
