import { randomUUID } from 'node:crypto';
import type { Express, Request, Response } from 'express';
import { forbidden, isHaloError, signAccessToken, unauthenticated, type Logger } from '@halo/kit';
import type { AuthStore } from './db/store';
import type { UserDirectory } from './domain/accounts';
import {
  clearedRefreshCookie,
  INVALID_REFRESH_TOKEN,
  isCrossSite,
  refreshCookie,
  refreshDecision,
  refreshTokenFrom,
  sha256Hex,
} from './domain/tokens';

/** What a login needs to know about a user (content's id, name and role). */
export interface LoginUser {
  id: number;
  name: string;
  role: 'user' | 'admin';
}

export interface SessionSettings {
  jwtSecret: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  cookieSecure: boolean;
  allowedOrigins: readonly string[];
}

const DAY_MS = 86_400_000;

/**
 * Sessions: an access token (JWT) plus a rotating refresh token in an HttpOnly cookie. A login
 * starts a token family with an absolute expiry; each refresh replaces the token by the next one
 * of its family (same expiry); presenting a replaced token again revokes the family.
 */
export class Sessions {
  constructor(
    private readonly deps: { store: AuthStore; users: UserDirectory; settings: SessionSettings; logger: Logger },
  ) {}

  accessToken(user: LoginUser): string {
    const { jwtSecret, accessTokenTtlSeconds } = this.deps.settings;
    return signAccessToken({ sub: String(user.id), name: user.name, role: user.role }, jwtSecret, accessTokenTtlSeconds);
  }

  /**
   * Answers a successful login: a new refresh-token family, its cookie, and
   * 200 `{"token","accessToken","user":{"id","name"}}`. Password login and OAuth login both end here.
   * The cookie is appended, so a cookie the caller already set (the OAuth state's removal) stays.
   */
  async issueLogin(res: Response, user: LoginUser): Promise<void> {
    const { settings, store } = this.deps;
    const refreshToken = randomUUID();
    const maxAgeSeconds = settings.refreshTokenTtlDays * 86_400;
    await store.insertRefreshToken({
      tokenHash: sha256Hex(refreshToken),
      familyId: randomUUID(),
      userId: user.id,
      expiresAt: new Date(Date.now() + settings.refreshTokenTtlDays * DAY_MS),
    });
    const accessToken = this.accessToken(user);
    res.append('Set-Cookie', refreshCookie(refreshToken, maxAgeSeconds, settings.cookieSecure));
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json({ token: accessToken, accessToken, user: { id: user.id, name: user.name } });
  }

  /** `POST /auth/refresh`: rotates the cookie's token and answers a fresh access token. */
  async refresh(req: Request, res: Response): Promise<void> {
    this.assertSameSite(req);
    const { store, users, settings, logger } = this.deps;
    const token = refreshTokenFrom(req.headers.cookie);
    if (!token) throw unauthenticated(INVALID_REFRESH_TOKEN);
    const hash = sha256Hex(token);
    const now = new Date();
    // Whose token is it? Looked up before the transaction, so no lock is held during the gRPC call.
    const seen = await store.refreshToken(hash);
    const decision = refreshDecision(seen, now);
    if (!seen || decision === 'invalid') throw unauthenticated(INVALID_REFRESH_TOKEN);
    if (decision === 'reuse') {
      await store.revokeFamily(seen.familyId);
      logger.warn({ requestId: req.id, userId: seen.userId, familyId: seen.familyId }, 'refresh token reused; family revoked');
      throw unauthenticated(INVALID_REFRESH_TOKEN);
    }
    let user: LoginUser;
    try {
      user = await users.byId(seen.userId, req.id);
    } catch (err) {
      if (!isHaloError(err) || err.kind !== 'NOT_FOUND') throw err;
      await store.revokeFamily(seen.familyId);
      throw unauthenticated(INVALID_REFRESH_TOKEN);
    }
    const next = randomUUID();
    const rotated = await store.rotateRefreshToken(hash, sha256Hex(next), now);
    if (rotated.kind !== 'rotated') {
      if (rotated.kind === 'reuse') {
        logger.warn({ requestId: req.id, userId: seen.userId, familyId: rotated.familyId }, 'refresh token reused; family revoked');
      }
      throw unauthenticated(INVALID_REFRESH_TOKEN);
    }
    const accessToken = this.accessToken(user);
    const maxAgeSeconds = (rotated.expiresAt.getTime() - Date.now()) / 1000;
    res.append('Set-Cookie', refreshCookie(next, maxAgeSeconds, settings.cookieSecure));
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json({ token: accessToken, accessToken });
  }

  /** `POST /auth/logout`: ends the cookie's session (its whole token family) and clears the cookie. */
  async logout(req: Request, res: Response): Promise<void> {
    this.assertSameSite(req);
    const token = refreshTokenFrom(req.headers.cookie);
    if (token) await this.deps.store.deleteFamilyOf(sha256Hex(token));
    res.append('Set-Cookie', clearedRefreshCookie(this.deps.settings.cookieSecure));
    res.status(204).end();
  }

  /** 403 for a request another site made the browser send (cookie routes only). */
  assertSameSite(req: Request): void {
    const origin = req.headers.origin;
    const crossSite = isCrossSite({
      secFetchSite: headerValue(req.headers['sec-fetch-site']),
      origin,
      // As the client addressed us (behind the gateway: its Host and X-Forwarded-Proto).
      ownOrigin: `${req.protocol}://${req.host}`,
      allowedOrigins: this.deps.settings.allowedOrigins,
    });
    if (crossSite) throw forbidden();
  }
}

const headerValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

// ── For code that has a response but not the wiring (the OAuth routes) ──────────────────────────

const registry = new WeakMap<object, Sessions>();

/** Makes `issueLogin(res, user)` work for every request this app (or an app mounted in it) serves. */
export function attachSessions(app: Express, sessions: Sessions): void {
  registry.set(app, sessions);
}

/**
 * Issues exactly the login response (new refresh-token family, cookie, 200 JSON) for `user`.
 * The OAuth callback calls this after it has found or created the user.
 */
export function issueLogin(res: Response, user: LoginUser): Promise<void> {
  // Express points res.app at the (sub-)app handling the request; mounted apps know their parent.
  let app: unknown = res.app;
  while (app && typeof app === 'object') {
    const sessions = registry.get(app);
    if (sessions) return sessions.issueLogin(res, user);
    app = (app as { parent?: unknown }).parent;
  }
  return Promise.reject(new Error('issueLogin: no Sessions attached to this app (see attachSessions)'));
}
