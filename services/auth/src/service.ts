import { resolve } from 'node:path';
import type { Response } from 'express';
import { signAccessToken } from '@halo/kit/auth';
import { closeRedis, openRedis, redisReady, type Redis } from '@halo/kit/db';
import { waitForServing } from '@halo/kit/grpc';
import type { Logger } from '@halo/kit/logging';
import type { Lifecycle } from '@halo/kit/process';
import { defineService } from '@halo/kit/service';
import { createPasswordHasher } from './adapters/argon2/passwords';
import { OAuthProviders } from './adapters/oidc/providers';
import { createLoginLimiter, createRegistrationLimiter } from './adapters/redis/login-limiter';
import { authConfigShape, refineAuthConfig } from './config';
import { seedDemoCredentials } from './db/seed';
import { AuthStore } from './db/store';
import { Accounts } from './domain/accounts';
import { ApiKeys, type TokenSigner } from './domain/api-keys';
import type { OAuthIdentity } from './domain/identities';
import { OAuthFlows } from './domain/oauth';
import { Sessions } from './domain/sessions';
import { authSchema } from './graphql/resolvers';
import { contentUsers } from './grpc/clients/content-users';
import { apiKeyServiceBinding } from './grpc/server/api-key-service';
import { believeGatewayOnly } from './rest/client-address';
import { restManifest } from './rest/manifest';
import { restRoutes } from './rest/routes';
import { HttpSessions } from './rest/sessions';

/** How long auth's seed waits for content to serve (the services start in parallel). */
const CONTENT_WAIT_MS = 30_000;

/** Expired refresh-token families are deleted this often. */
const PURGE_INTERVAL_MS = 60 * 60_000;

/**
 * Credentials, sessions (JWT + rotating refresh tokens), API keys and OAuth/OIDC login. Users
 * themselves live in content, reached over gRPC. Redis (optional) holds the login and registration limiters' counters.
 */
export const authService = defineService({
  name: 'auth',
  root: resolve(__dirname, '..'),
  config: authConfigShape,
  refineConfig: refineAuthConfig,
  peers: { users: { service: 'content', client: contentUsers } },
  domain: async ({ db, config, logger, lifecycle, peers: { users } }) => {
    const redis = config.REDIS_URL ? await limiterRedis(config.REDIS_URL, logger, lifecycle) : null;
    const store = new AuthStore(db);
    schedulePurge(store, logger, lifecycle);
    const passwords = await createPasswordHasher();
    const limiter = createLoginLimiter(
      {
        maxFailsPerEmail: config.LOGIN_MAX_FAILS_PER_EMAIL,
        maxFailsPerIp: config.LOGIN_MAX_FAILS_PER_IP,
        windowSeconds: config.LOGIN_WINDOW_S,
        // One namespace per database schema, so deployments (and test files) sharing a Redis never mix.
        keyPrefix: `halo:${db.schema}`,
      },
      redis,
      logger,
    );
    const registrations = createRegistrationLimiter(
      { maxPerIp: config.REGISTER_MAX_PER_IP, windowSeconds: config.REGISTER_WINDOW_S, keyPrefix: `halo:${db.schema}` },
      redis,
      logger,
    );
    const sign: TokenSigner = (claims, ttl) => signAccessToken(claims, config.JWT_SECRET, ttl);
    const sessions = new Sessions({
      repo: store,
      users,
      sign,
      accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL,
      refreshTokenTtlDays: config.REFRESH_TOKEN_TTL_DAYS,
      logger,
    });
    return {
      store,
      users,
      passwords,
      redis,
      accounts: new Accounts({ users, credentials: store, identities: store, passwords, limiter, registrations, logger }),
      apiKeys: new ApiKeys({ repo: store, users, sign, tokenTtlSeconds: config.API_KEY_TOKEN_TTL }),
      sessions,
      oauth: new OAuthFlows({ store, providers: new OAuthProviders(config.OAUTH_PROVIDERS, { logger }) }),
    };
  },
  // The demo users are content's: wait until content serves (its gRPC health) before asking it.
  seed: async ({ domain, logger, config }) => {
    if (!(await waitForServing(config.CONTENT_GRPC_ADDR, { timeoutMs: CONTENT_WAIT_MS }))) {
      logger.warn({ peer: 'content', waitedMs: CONTENT_WAIT_MS }, 'content is not serving yet; seeding anyway');
    }
    await seedDemoCredentials({ ...domain, logger });
  },
  // Logins are refused (503, fail closed) while Redis is down, so readiness fails with it.
  ready: async ({ redis }) => {
    if (redis) await redis.ping();
  },
  // The client address for the per-address limits: the gateway's last X-Forwarded-For entry, when
  // the gateway's service token says it is the gateway's; else the socket address.
  configureHttp: (app, _config, identity) => believeGatewayOnly(app, identity),
  graphql: { schema: (typeDefs, { accounts }) => authSchema(typeDefs, accounts) },
  restManifest,
  rest: ({ accounts, apiKeys, sessions, oauth }, config) => {
    const web = new HttpSessions(sessions, { cookieSecure: config.COOKIE_SECURE, allowedOrigins: config.CORS_ORIGINS });
    // The linked (or verified-email) user, then exactly the answer of /auth/login.
    const onLogin = async (identity: OAuthIdentity, _req: unknown, res: Response) =>
      web.issueLogin(res, await accounts.signInWith(identity));
    const oauthOptions = { flows: oauth, cookieSecure: config.COOKIE_SECURE, onLogin };
    return restRoutes({ accounts, apiKeys, sessions: web, oauth: oauthOptions, jwtSecret: config.JWT_SECRET });
  },
  grpc: ({ apiKeys }, logger) => [apiKeyServiceBinding(apiKeys, logger)],
});

export type AuthService = Awaited<ReturnType<typeof authService.start>>;

/** Not fatal when down at start-up: logins answer 503 (fail closed) and /readyz fails until Redis is back. */
async function limiterRedis(url: string, logger: Logger, lifecycle: Lifecycle): Promise<Redis> {
  const client = openRedis(url, logger);
  lifecycle.register('redis', () => {
    closeRedis(client);
  });
  if (!(await redisReady(client))) logger.warn('redis not reachable at start-up; logins are refused until it is');
  return client;
}

function schedulePurge(store: AuthStore, logger: Logger, lifecycle: Lifecycle): void {
  const purge = setInterval(() => {
    store.purgeExpiredRefreshTokens().then(
      (n) => n && logger.info({ deleted: n }, 'expired refresh tokens purged'),
      (err: unknown) => logger.warn({ err }, 'refresh token purge failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  lifecycle.register('refresh token purge', () => clearInterval(purge));
}
