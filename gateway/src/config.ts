import { resolve } from 'node:path';
import {
  ConfigError,
  defaultGrpcAddr,
  defaultServiceUrl,
  effectiveOrigins,
  env,
  GATEWAY_METRICS_PORT,
  GATEWAY_PORT,
  loadConfig,
  originListField,
  refuseDevSecrets,
  EDGE_SERVICE_NAMES,
  serviceUrlVar,
  z,
  type EdgeServiceName,
} from '@halo/kit';
import { PERSISTED_MODES } from './graphql';
import { parseTrustedProxies } from './http';
import { GATEWAY_DIR } from './paths';
import { DEFAULT_ROUTES_PATH } from './rest';
import { clientNameOf } from './usage';

/** The composed supergraph committed beside the package (`npm run compose` writes it). */
export const DEFAULT_SUPERGRAPH_PATH = resolve(GATEWAY_DIR, 'supergraph.graphql');
/** The composed OpenAPI document committed beside the package (`npm run compose` writes it). */
export const DEFAULT_OPENAPI_PATH = resolve(GATEWAY_DIR, 'openapi.json');

/** A non-negative count whose default depends on HALO_ENV (filled in by loadGatewayConfig). */
const optionalCount = () => z.coerce.number().int().min(0).optional();

/** The rate limits' defaults: production's, and the embedded mode's (never reached by the demo, e2e or benchmarks). */
export const RATE_LIMIT_DEFAULTS = {
  production: { anonymous: 300, authenticated: 1_200, graphqlCost: 100_000 },
  embedded: { anonymous: 10_000_000, authenticated: 10_000_000, graphqlCost: 1_000_000_000 },
} as const;

export const gatewayConfigShape = {
  HALO_ENV: env.haloEnv(),
  HTTP_HOST: env.str('0.0.0.0'),
  HTTP_PORT: env.port(GATEWAY_PORT),
  /**
   * The web apps' origins that may call the gateway from a browser (CORS, WebSocket upgrades) and
   * sign in through auth, which reads the same list: exact origins and patterns, comma-separated
   * (`https://app.example.com,http://localhost:*,https://*.example.com`). Unset:
   * `http://localhost:*,http://127.0.0.1:*` when HALO_ENV=development, else none (same-origin only).
   */
  CORS_ORIGINS: originListField(),
  /**
   * Prometheus' `GET /metrics`, on its own port (bound on HTTP_HOST) so the public one never
   * serves it: a port (0: any free one, as HTTP_PORT), or `off`.
   */
  METRICS_PORT: z
    .string()
    .default(String(GATEWAY_METRICS_PORT))
    .transform((v, ctx) => {
      if (v === 'off') return null;
      const port = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
      if (port <= 65535) return port;
      ctx.addIssue({ code: 'custom', message: 'must be a port (0: any free one) or off' });
      return z.NEVER;
    }),
  LOG_LEVEL: env.logLevel(),
  BODY_LIMIT: env.bytes('1mb'),
  SHUTDOWN_TIMEOUT_MS: env.int(10_000),
  /** A client must have sent its request headers within this (408 otherwise). */
  HTTP_HEADERS_TIMEOUT_MS: env.int(10_000, 1),
  /** A client must have sent its whole request, body included, within this (408 otherwise). */
  HTTP_REQUEST_TIMEOUT_MS: env.int(30_000, 1),
  /**
   * The proxies in front of the gateway (the ingress): addresses, CIDR ranges, `loopback`,
   * `linklocal`, `uniquelocal`, comma-separated. Only their `X-Forwarded-For` is kept; anyone
   * else's is replaced by the socket address. Default: none (the Helm chart sets its ingress's).
   */
  GATEWAY_TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((v, ctx) => {
      try {
        return parseTrustedProxies(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  /** Idle time on an upstream connection before the gateway answers 504. */
  UPSTREAM_TIMEOUT_MS: env.int(30_000, 1),
  SUPERGRAPH_PATH: z.string().default(DEFAULT_SUPERGRAPH_PATH),
  /** HS256 secret shared with auth; without it every token is refused (anonymous calls only). */
  JWT_SECRET: z.string().min(32, 'must be at least 32 bytes').optional(),
  /** auth's gRPC address, for exchanging `X-API-Key` for a token. */
  AUTH_GRPC_ADDR: env.str(defaultGrpcAddr('auth')),
  GRPC_DEADLINE_MS: env.int(2_000, 1),
  /**
   * How often an open subscription's API key is exchanged again (its token renewed; a revoked key's
   * subscriptions end within one period). Below the exchanged token's life (auth's API_KEY_TOKEN_TTL).
   */
  API_KEY_RECHECK_MS: env.int(60_000, 100),
  /** The gateway's private Ed25519 JWK: signs its gRPC calls to auth (docs/service-identity.md). */
  SERVICE_SIGNING_KEY: z.string().optional(),
  /** The composed REST route table (versions and deprecations included) to serve and watch. */
  ROUTES_PATH: z.string().default(DEFAULT_ROUTES_PATH),
  /** The composed OpenAPI document served at `/openapi.json` and rendered at `/docs`. */
  OPENAPI_PATH: z.string().default(DEFAULT_OPENAPI_PATH),

  // ── GraphQL at the edge (src/graphql/limits.ts, src/graphql/persisted.ts; README "GraphQL at the edge") ──
  /** Deepest field nesting an operation may have (root fields are depth 1). */
  GRAPHQL_MAX_DEPTH: env.int(7, 1),
  /** Largest estimated cost (IBM cost spec, `@cost`/`@listSize` from the supergraph). */
  GRAPHQL_MAX_COST: env.int(1000, 1),
  /** Items assumed for a list field whose size no `@listSize` argument or assumedSize gives. */
  GRAPHQL_DEFAULT_LIST_SIZE: env.int(10, 1),
  /** Aliased fields per operation (fragments included; `__typename` aliases are free). */
  GRAPHQL_MAX_ALIASES: env.int(15, 0),
  /** Lexical tokens per document: the parser stops counting there (graphql-js `maxTokens`). */
  GRAPHQL_MAX_TOKENS: env.int(1000, 1),
  /** Operations per batched request (array body). */
  GRAPHQL_MAX_BATCH: env.int(10, 1),
  /** How long a registered persisted query (APQ) is kept, in seconds. */
  GRAPHQL_APQ_TTL_S: env.int(86_400, 1),
  /**
   * Trusted documents: a persisted-query manifest (JSON); when set, only its operations run.
   * Unset (the default): any operation within the limits runs.
   */
  GRAPHQL_TRUSTED_DOCUMENTS: z.string().min(1).optional(),
  /**
   * Registered operations (docs/registry.md "Client operation lists"): `off`, `audit` (operations
   * not registered for their client are served, counted and logged) or `enforce` (they are refused
   * with 400). The lists come from the registry (REGISTRY_URL) and GRAPHQL_TRUSTED_DOCUMENTS.
   * Default: `enforce` with GRAPHQL_TRUSTED_DOCUMENTS, else `off`.
   */
  PERSISTED_OPERATIONS: z.enum(PERSISTED_MODES).optional(),
  /** Client names (comma-separated) that may still send free-form operations in `enforce`, e.g. an internal admin tool. */
  PERSISTED_OPERATIONS_ALLOW_CLIENTS: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const names = v
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      const bad = names.find((n) => clientNameOf(n, undefined) !== n);
      if (bad !== undefined) ctx.addIssue({ code: 'custom', message: `"${bad}" is not a client name ([A-Za-z0-9._/@-], at most 64)` });
      return names;
    }),
  /**
   * `__schema` / `__type` queries; unset: on except when HALO_ENV=production (where they are
   * 400 `INTROSPECTION_DISABLED`). GraphiQL (development) needs them on.
   */
  GRAPHQL_INTROSPECTION: env.flag(),
  /** Memory for cached query plans (@apollo/gateway's LRU), in MiB. */
  GRAPHQL_QUERY_PLAN_CACHE_MIB: env.int(30, 1),
  /** Identical subgraph fetches of queries (same caller) share one request while it is in flight. */
  GRAPHQL_DEDUPE_INFLIGHT: env.bool(true),
  /**
   * Plain POST operations answered by the lean path (ADR 0016): the same edge rules and answers,
   * without Apollo Server's per-request pipeline. `false`: Apollo Server answers everything.
   */
  GRAPHQL_LEAN: env.bool(true),
  /** Memory for the edge response cache of anonymous public queries, in MiB; 0 turns it off. */
  GRAPHQL_RESPONSE_CACHE_MIB: env.int(32, 0),
  /** The APQ store, response cache tier and rate-limit counters shared by every replica; unset (the embedded mode): each process keeps its own. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  /** Namespace of the gateway's keys in that Redis. */
  REDIS_KEY_PREFIX: env.str('halo:gateway:'),

  // ── Rate limits per caller (src/ratelimit; README "Limits"). Unset: the production defaults, or
  //    the embedded ones (HALO_ENV development/test) that no demo, test suite or benchmark reaches. 0: off. ──
  /** The window every quota is counted over, in seconds. */
  RATE_LIMIT_WINDOW_S: env.int(60, 1),
  /** Requests per window per client address without credentials (production default 300). */
  RATE_LIMIT_ANONYMOUS: optionalCount(),
  /** Requests per window per user or API key (production default 1,200). */
  RATE_LIMIT_AUTHENTICATED: optionalCount(),
  /** Estimated GraphQL cost per window per caller (production default 100,000). */
  RATE_LIMIT_GRAPHQL_COST: optionalCount(),

  // ── The schema registry (docs/registry.md "Gateway"; src/supergraph, src/usage) ──
  /** The registry's HTTP base: compositions come from it; unset, from the files only. */
  REGISTRY_URL: env.url(),
  /** Interval of the conditional `GET /v1/supergraph`. */
  REGISTRY_POLL_MS: env.int(2_000, 100),
  /**
   * Ready on the committed files before the registry has answered once (the embedded mode, whose
   * registry starts beside it). Off, a gateway that (re)starts while the registry is away is not
   * ready: it would serve an older API than its peers.
   */
  REGISTRY_BOOT_FROM_FILES: env.bool(false),
  /** Record which fields operations use and send it to the registry; default on with a registry. */
  USAGE_REPORTING: env.flag(),
  /** How often recorded usage is sent. */
  USAGE_FLUSH_MS: env.int(10_000, 100),
  /** Distinct (operation, client) pairs held between two sends; beyond, requests are counted as dropped. */
  USAGE_MAX_OPERATIONS: env.int(5_000, 1),
};

/**
 * One optional `<SERVICE>_URL` per service the gateway routes to, e.g. `CONTENT_URL` (not the
 * internal registry: its REGISTRY_URL is the gateway's own setting, docs/registry.md).
 */
const serviceUrlShape = Object.fromEntries(EDGE_SERVICE_NAMES.map((name) => [serviceUrlVar(name), env.url()]));

export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

/**
 * Reads the gateway's environment once. A bad value throws the kit's one-line ConfigError.
 * `serviceUrls` holds each service's HTTP base URL (no trailing slash): REST is proxied to it and
 * its subgraph is `<base>/graphql`, so one variable moves both.
 */
export function loadGatewayConfig(source: Record<string, string | undefined> = process.env) {
  const { USAGE_REPORTING, ...config } = loadConfig(gatewayConfigShape, source);
  refuseDevSecrets(source, config.HALO_ENV);
  const urls = loadConfig(serviceUrlShape, source);
  const serviceUrls = {} as Record<EdgeServiceName, string>;
  /** The ones set explicitly: they win over the URLs services publish with their contracts. */
  const explicitServiceUrls: Partial<Record<EdgeServiceName, string>> = {};
  for (const name of EDGE_SERVICE_NAMES) {
    const given = urls[serviceUrlVar(name)]?.replace(/\/+$/, '');
    if (given) explicitServiceUrls[name] = given;
    serviceUrls[name] = given ?? defaultServiceUrl(name);
  }
  const registryUrl = config.REGISTRY_URL?.replace(/\/+$/, '');
  if (USAGE_REPORTING && !registryUrl) {
    throw new ConfigError('Invalid configuration: USAGE_REPORTING: needs REGISTRY_URL (usage is sent to the registry)');
  }
  const persistedOperations = config.PERSISTED_OPERATIONS ?? (config.GRAPHQL_TRUSTED_DOCUMENTS ? 'enforce' : 'off');
  if (persistedOperations === 'off' && config.GRAPHQL_TRUSTED_DOCUMENTS) {
    throw new ConfigError('Invalid configuration: GRAPHQL_TRUSTED_DOCUMENTS: needs PERSISTED_OPERATIONS audit or enforce (it is off)');
  }
  if (persistedOperations !== 'off' && !registryUrl && !config.GRAPHQL_TRUSTED_DOCUMENTS) {
    throw new ConfigError(
      `Invalid configuration: PERSISTED_OPERATIONS: ${persistedOperations} needs REGISTRY_URL or GRAPHQL_TRUSTED_DOCUMENTS (no operation would be registered)`,
    );
  }
  const limitDefaults = RATE_LIMIT_DEFAULTS[config.HALO_ENV === 'production' ? 'production' : 'embedded'];
  return {
    ...config,
    RATE_LIMIT_ANONYMOUS: config.RATE_LIMIT_ANONYMOUS ?? limitDefaults.anonymous,
    RATE_LIMIT_AUTHENTICATED: config.RATE_LIMIT_AUTHENTICATED ?? limitDefaults.authenticated,
    RATE_LIMIT_GRAPHQL_COST: config.RATE_LIMIT_GRAPHQL_COST ?? limitDefaults.graphqlCost,
    GRAPHQL_INTROSPECTION: config.GRAPHQL_INTROSPECTION ?? config.HALO_ENV !== 'production',
    CORS_ORIGINS: effectiveOrigins(config.CORS_ORIGINS, config.HALO_ENV),
    REGISTRY_URL: registryUrl,
    USAGE_REPORTING: USAGE_REPORTING ?? registryUrl !== undefined,
    PERSISTED_OPERATIONS: persistedOperations,
    serviceUrls,
    explicitServiceUrls,
  };
}

/** The GraphQL limits of the configuration, as the engine takes them (createGraphQL's `limits`). */
export function graphqlLimits(config: GatewayConfig) {
  return {
    maxDepth: config.GRAPHQL_MAX_DEPTH,
    maxCost: config.GRAPHQL_MAX_COST,
    defaultListSize: config.GRAPHQL_DEFAULT_LIST_SIZE,
    maxAliases: config.GRAPHQL_MAX_ALIASES,
    maxTokens: config.GRAPHQL_MAX_TOKENS,
    maxBatch: config.GRAPHQL_MAX_BATCH,
  };
}

/** The rate limits of the configuration, as src/ratelimit takes them; counters under REDIS_KEY_PREFIX. */
export function rateLimitConfig(config: GatewayConfig) {
  return {
    windowSeconds: config.RATE_LIMIT_WINDOW_S,
    anonymous: config.RATE_LIMIT_ANONYMOUS,
    authenticated: config.RATE_LIMIT_AUTHENTICATED,
    graphqlCost: config.RATE_LIMIT_GRAPHQL_COST,
    keyPrefix: `${config.REDIS_KEY_PREFIX}ratelimit:`,
  };
}
