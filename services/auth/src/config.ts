import {
  assertSigningSecret,
  ConfigError,
  defaultGrpcAddr,
  effectiveOrigins,
  env,
  originListField,
  OriginList,
  z,
  type ServiceConfig,
} from '@halo/kit';
import { parseDuration } from './domain/ttl';
import { parseOAuthProviders } from './adapters/oidc/providers';

const duration = (fallback: string) =>
  z
    .string()
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
  /** Lifetime of the access tokens issued at login and refresh (`900`, `15m`, `24h`). */
  ACCESS_TOKEN_TTL: duration('15m'),
  /** Absolute lifetime of a refresh-token family (rotation keeps the family's first expiry). */
  REFRESH_TOKEN_TTL_DAYS: env.int(30, 1),
  /** Lifetime of the tokens ExchangeApiKey issues for an API key. */
  API_KEY_TOKEN_TTL: duration('5m'),
  /** The refresh cookie's Secure flag; defaults to on except when HALO_ENV=development (plain http). */
  COOKIE_SECURE: env.flag(),
  /**
   * The web apps' origins (besides this service's own) allowed to call login, refresh and logout:
   * the same list the gateway's CORS reads (exact origins and patterns, @halo/kit's OriginList).
   * Unset: `http://localhost:*,http://127.0.0.1:*` when HALO_ENV=development, else none.
   */
  CORS_ORIGINS: originListField(),
  /** The former name of CORS_ORIGINS, still read: both set, both lists count. */
  ALLOWED_ORIGINS: originListField(),
  LOGIN_MAX_FAILS_PER_EMAIL: env.int(5, 1),
  LOGIN_MAX_FAILS_PER_IP: env.int(20, 1),
  LOGIN_WINDOW_S: env.int(900, 1),
  /** Registrations per client address per REGISTER_WINDOW_S (429 with Retry-After beyond). */
  REGISTER_MAX_PER_IP: env.int(10, 1),
  REGISTER_WINDOW_S: env.int(3600, 1),
  /** The login and registration limiters' store; without it the counters live in this process's memory. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  CONTENT_GRPC_ADDR: env.str(defaultGrpcAddr('content')),
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
