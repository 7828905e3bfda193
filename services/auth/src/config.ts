import { assertSigningSecret } from '@halo/kit/auth';
import { ConfigError, defaultGrpcAddr, effectiveOrigins, env, originListField, OriginList, z } from '@halo/kit/config';
import type { ServiceConfig } from '@halo/kit/service';
import { parseDuration } from './domain/ttl';
import { oauthProvidersShape, parseOAuthProviders } from './adapters/oidc/providers';

const duration = (fallback: string) =>
  z
    .string()
    .meta({ examples: ['900', '30s', '15m', '24h', '7d'] })
    .default(fallback)
    .transform((v, ctx) => {
      const seconds = parseDuration(v);
      if (seconds === null) {
        ctx.addIssue({ code: 'custom', message: 'must be a duration like 900, 15m, 24h or 7d' });
        return z.NEVER;
      }
      return seconds;
    });

/** Auth's own variables; the kit adds the ones every service reads (ports, DATABASE_URL, SEED_DEMO_DATA…). */
export const authConfigShape = {
  ACCESS_TOKEN_TTL: duration('15m').describe('lifetime of the access tokens issued at login and refresh (`24h` for the simple flow)'),
  REFRESH_TOKEN_TTL_DAYS: env
    .int(30, 1)
    .describe("absolute lifetime of a login session, in days (rotation keeps the refresh-token family's first expiry)"),
  API_KEY_TOKEN_TTL: duration('5m').describe('lifetime of the token an API key is exchanged for (`ExchangeApiKey`)'),
  COOKIE_SECURE: env
    .flag()
    .describe("the refresh cookie's `Secure` flag; unset: on, except when `HALO_ENV=development` (the embedded mode over plain http)"),
  CORS_ORIGINS: originListField().describe(
    "the web apps' origins (besides auth's own) whose browsers may call login, refresh and logout: the gateway's list, " +
      'read by both (exact origins or patterns). Unset: `http://localhost:*,http://127.0.0.1:*` when `HALO_ENV=development`, else none',
  ),
  ALLOWED_ORIGINS: originListField().describe('the former name of `CORS_ORIGINS`, still read (both set: both lists count)'),
  LOGIN_MAX_FAILS_PER_EMAIL: env.int(5, 1).describe('failed logins per email per `LOGIN_WINDOW_S`, then 429 with `Retry-After`'),
  LOGIN_MAX_FAILS_PER_IP: env.int(20, 1).describe('failed logins per client address per `LOGIN_WINDOW_S`, then 429 with `Retry-After`'),
  LOGIN_WINDOW_S: env.int(900, 1).describe("the login limiter's window, in seconds"),
  REGISTER_MAX_PER_IP: env
    .int(10, 1)
    .describe('registrations per client address per `REGISTER_WINDOW_S`, then 429 with `Retry-After` (test suites raise it)'),
  REGISTER_WINDOW_S: env.int(3600, 1).describe("the registration limiter's window, in seconds"),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional()
    .describe(
      'Redis for the login and registration limiters, shared by replicas (they fail closed while it is down: 503); unset: in this process',
    ),
  CONTENT_GRPC_ADDR: env.str(defaultGrpcAddr('content')).describe("content's gRPC address (its users)"),
  ...oauthProvidersShape,
};

/** After the kit's validation: the rules that span variables, and the OAuth providers. */
export function refineAuthConfig(config: ServiceConfig<typeof authConfigShape>, source: Record<string, string | undefined>) {
  // auth signs tokens, so unlike the other services it cannot run without a secret.
  let secret: string;
  try {
    secret = assertSigningSecret(config.JWT_SECRET);
  } catch {
    const shown = config.JWT_SECRET === undefined ? 'is not set' : 'got <redacted>';
    throw new ConfigError(`Invalid configuration: JWT_SECRET: must be at least 32 bytes of random data (${shown})`);
  }
  return {
    ...config,
    JWT_SECRET: secret,
    /** OAuth/OIDC providers from OAUTH_PROVIDERS + OAUTH_<NAME>_*; a bad one stops start-up here. */
    OAUTH_PROVIDERS: parseOAuthProviders(source),
    COOKIE_SECURE: config.COOKIE_SECURE ?? config.HALO_ENV !== 'development',
    CORS_ORIGINS: corsOrigins(config.CORS_ORIGINS, config.ALLOWED_ORIGINS, config.HALO_ENV),
  };
}

function corsOrigins(cors: OriginList | undefined, alias: OriginList | undefined, haloEnv: string): OriginList {
  if (cors && alias) return OriginList.parse([...cors.entries, ...alias.entries].join(','));
  return effectiveOrigins(cors ?? alias, haloEnv);
}
