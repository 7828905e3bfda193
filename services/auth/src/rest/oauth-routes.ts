import { Router, type Request, type Response } from 'express';
import { mountRestRoutes, type RestHandlers } from '@halo/kit/rest';
import type { OAuthIdentity } from '../domain/identities';
import type { OAuthFlows } from '../domain/oauth';
import { clearedStateCookie, cookieValue, OAUTH_STATE_COOKIE, stateCookie } from './cookies';
import { restManifest } from './manifest';

export interface OAuthRoutesOptions {
  flows: OAuthFlows;
  /** The state cookie's Secure flag: off only in the embedded dev mode over plain http. */
  cookieSecure: boolean;
  /**
   * Called with the verified identity; answers the request (the service links or creates the
   * local user and responds exactly like /auth/login). Its `Set-Cookie` must be appended
   * (express `res.cookie` does), not set, to keep the state cookie's removal.
   */
  onLogin: (identity: OAuthIdentity, req: Request, res: Response) => Promise<void>;
}

/**
 * The handlers of `oauthStart` and `oauthCallback` (src/rest/manifest.ts). Errors go to the kit's
 * errorHandler; an unknown provider is 404 `Not found`. The state cookie's Path is /auth/oauth.
 */
export function oauthHandlers(opts: OAuthRoutesOptions) {
  const { flows, cookieSecure, onLogin } = opts;
  return {
    oauthStart: async (_req, res, { params }) => {
      const { redirectUrl, state } = await flows.start(params.provider);
      res.setHeader('Cache-Control', 'no-store');
      res.append('Set-Cookie', stateCookie(state, cookieSecure));
      res.redirect(302, redirectUrl);
    },
    oauthCallback: async (req, res, { params }) => {
      res.setHeader('Cache-Control', 'no-store');
      // The flow is over whatever happens next: the cookie goes with the first answer.
      res.append('Set-Cookie', clearedStateCookie(cookieSecure));
      const callbackUrl = new URL(req.originalUrl, 'http://callback.invalid');
      const identity = await flows.callback(params.provider, callbackUrl, cookieValue(req.headers.cookie, OAUTH_STATE_COOKIE));
      await onLogin(identity, req, res);
    },
  } satisfies RestHandlers<typeof oauthManifest>;
}

/** The manifest's OAuth routes alone: what `oauthRoutes` mounts. */
const oauthManifest = { ...restManifest, routes: restManifest.routes.filter((r) => r.id === 'oauthStart' || r.id === 'oauthCallback') };

/** The OAuth routes alone, at their full paths (a test's app; the service mounts them with the rest). */
export function oauthRoutes(opts: OAuthRoutesOptions): Router {
  return mountRestRoutes(Router(), oauthManifest, oauthHandlers(opts), { jwtSecret: undefined });
}
