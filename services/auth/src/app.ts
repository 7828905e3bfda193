import { resolve } from 'node:path';
import {
  createHttpApp,
  openRedis,
  openServiceDb,
  redisReady,
  serveService,
  signAccessToken,
  startSubgraph,
  subgraphMiddleware,
  withLifecycle,
  type Db,
  type Logger,
  type Redis,
  type StartedService,
} from '@halo/kit';
import type { AuthConfig } from './config';
import { seedDemoCredentials } from './db/seed';
import { AuthStore } from './db/store';
import { Accounts } from './domain/accounts';
import { ApiKeys } from './domain/api-keys';
import { authSchema, type GraphQLContext } from './graphql/resolvers';
import { apiKeyServiceBinding } from './grpc/api-key-service';
import { contentUsers } from './grpc/content-users';
import { linkIdentity, OAuthFlows, OAuthProviders, oauthRoutes } from './oauth';
import { restRoutes } from './rest/routes';
import { createLoginLimiter } from './security/login-limiter';
import { createPasswordHasher } from './security/passwords';
import { attachSessions, Sessions } from './session';

export const SERVICE_NAME = 'auth';
export const MIGRATIONS_DIR = resolve(__dirname, '../migrations');
/** Expired refresh-token families are deleted this often. */
const PURGE_INTERVAL_MS = 60 * 60_000;

export type AuthService = StartedService;

/**
 * Wires the auth service: database (+ migrations, + demo credentials in dev), the login limiter
 * (Redis or memory), content's UserService client, the domain, and its adapters — REST, the
 * GraphQL subgraph and the gRPC ApiKeyService — then starts serving.
 * Pass `db` to reuse an open database (tests give each file its own throwaway schema).
 */
export function startAuthService(config: AuthConfig, logger: Logger, opts: { db?: Db } = {}): Promise<AuthService> {
  return withLifecycle(logger, config.SHUTDOWN_TIMEOUT_MS, async (lifecycle) => {
    const db = await openServiceDb(SERVICE_NAME, config, { logger, lifecycle, migrationsDir: MIGRATIONS_DIR, given: opts.db });

    const users = contentUsers(config.CONTENT_GRPC_ADDR, config.GRPC_DEADLINE_MS);
    lifecycle.register('content client', () => users.close());

    let redis: Redis | null = null;
    if (config.REDIS_URL) {
      const client = openRedis(config.REDIS_URL, logger);
      redis = client;
      lifecycle.register('redis', () => {
        client.disconnect();
      });
      // Not fatal: logins answer 503 (fail closed) and /readyz fails until Redis is reachable.
      if (!(await redisReady(client))) logger.warn('redis not reachable at start-up; logins are refused until it is');
    }

    const store = new AuthStore(db);
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
    const accounts = new Accounts({ users, credentials: store, passwords, limiter, logger });
    const apiKeys = new ApiKeys({
      repo: store,
      users,
      sign: (claims, ttl) => signAccessToken(claims, config.JWT_SECRET, ttl),
      tokenTtlSeconds: config.API_KEY_TOKEN_TTL,
    });
    const sessions = new Sessions({
      store,
      users,
      logger,
      settings: {
        jwtSecret: config.JWT_SECRET,
        accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL,
        refreshTokenTtlDays: config.REFRESH_TOKEN_TTL_DAYS,
        cookieSecure: config.COOKIE_SECURE,
        allowedOrigins: config.ALLOWED_ORIGINS,
      },
    });

    if (config.SEED_DEMO_DATA) await seedDemoCredentials({ store, users, passwords, logger });

    const purge = setInterval(() => {
      store.purgeExpiredRefreshTokens().then(
        (n) => n && logger.info({ deleted: n }, 'expired refresh tokens purged'),
        (err: unknown) => logger.warn({ err }, 'refresh token purge failed'),
      );
    }, PURGE_INTERVAL_MS);
    purge.unref();
    lifecycle.register('refresh token purge', () => clearInterval(purge));

    const apollo = await startSubgraph<GraphQLContext>({ schema: authSchema(accounts), logger, lifecycle });

    const ready = async () => {
      await db.ping();
      if (redis) await redis.ping();
    };
    const app = createHttpApp({ logger, lifecycle, ready, bodyLimit: config.BODY_LIMIT });
    // The client address for the per-IP login limit comes from X-Forwarded-For set by trusted proxies.
    app.set('trust proxy', config.TRUST_PROXY);
    attachSessions(app, sessions);
    app.use('/graphql', subgraphMiddleware(apollo, config.JWT_SECRET, () => ({})));

    // OAuth 2.0 / OIDC login: after /graphql, before the REST routes and the 404 handler.
    const flows = new OAuthFlows({ db, providers: new OAuthProviders(config.OAUTH_PROVIDERS, { logger }), logger });
    app.use(
      '/auth/oauth',
      oauthRoutes({
        flows,
        cookieSecure: config.COOKIE_SECURE,
        // A verified email links (or creates) the local user; then the same answer as /auth/login.
        onLogin: async (identity, req, res) => {
          const user = await accounts.findOrCreateUserByEmail(identity, req.id);
          await linkIdentity(db, identity, user.id);
          await sessions.issueLogin(res, user);
        },
      }),
    );

    app.use(restRoutes({ accounts, apiKeys, sessions, jwtSecret: config.JWT_SECRET }));
    return serveService({ app, grpcServices: [apiKeyServiceBinding(apiKeys, logger)], config, lifecycle, logger, db });
  });
}
