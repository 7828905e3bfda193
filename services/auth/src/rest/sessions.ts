import type { Request, Response } from 'express';
import type { OriginList } from '@halo/kit/config';
import type { User } from '@halo/kit/domain';
import { forbidden } from '@halo/kit/errors';
import type { IssuedTokens, Sessions } from '../domain/sessions';
import { isCrossSite } from '../domain/tokens';
import { clearedRefreshCookie, refreshCookie, refreshTokenFrom } from './cookies';

/**
 * The session use case over HTTP: the refresh token travels in an HttpOnly cookie, answers are
 * never cached, and the cookie routes refuse requests another site made the browser send.
 */
export class HttpSessions {
  constructor(
    private readonly sessions: Sessions,
    private readonly settings: { cookieSecure: boolean; allowedOrigins: OriginList },
  ) {}

  /**
   * Answers a successful login (password or OAuth): a new session, its cookie, and
   * 200 `{"token","accessToken","user":{"id","name"}}`. The cookie is appended, so a cookie the
   * caller already set (the OAuth state's removal) stays.
   */
  async issueLogin(res: Response, user: Pick<User, 'id' | 'name' | 'role'>): Promise<void> {
    const { accessToken } = this.setCookie(res, await this.sessions.start(user));
    res.status(200).json({ token: accessToken, accessToken, user: { id: user.id, name: user.name } });
  }

  /** `POST /auth/refresh`: rotates the cookie's token and answers a fresh access token. */
  async refresh(req: Request, res: Response): Promise<void> {
    this.assertSameSite(req);
    const { accessToken } = this.setCookie(res, await this.sessions.refresh(refreshTokenFrom(req.headers.cookie)));
    res.status(200).json({ token: accessToken, accessToken });
  }

  /** `POST /auth/logout`: ends the cookie's session (its whole token family) and clears the cookie. */
  async logout(req: Request, res: Response): Promise<void> {
    this.assertSameSite(req);
    await this.sessions.end(refreshTokenFrom(req.headers.cookie));
    res.append('Set-Cookie', clearedRefreshCookie(this.settings.cookieSecure));
    res.status(204).end();
  }

  /** 403 for a request another site made the browser send (cookie routes and login). */
  assertSameSite(req: Request): void {
    const crossSite = isCrossSite({
      secFetchSite: headerValue(req.headers['sec-fetch-site']),
      origin: req.headers.origin,
      // As the client addressed us (behind the gateway: its Host and X-Forwarded-Proto).
      ownOrigin: `${req.protocol}://${req.host}`,
      allowedOrigins: this.settings.allowedOrigins,
    });
    if (crossSite) throw forbidden();
  }

  private setCookie(res: Response, tokens: IssuedTokens): IssuedTokens {
    res.append('Set-Cookie', refreshCookie(tokens.refreshToken, tokens.refreshTtlSeconds, this.settings.cookieSecure));
    res.setHeader('Cache-Control', 'no-store');
    return tokens;
  }
}

const headerValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
