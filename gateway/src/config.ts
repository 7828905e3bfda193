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
  serviceConfigShape,
  EDGE_SERVICE_NAMES,
  serviceUrlVar,
  z,
  type EdgeServiceName,
} from '@halo/kit/config';
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

/** A rate limit's defaults, said in its description (they depend on HALO_ENV, so the shape has none). */
const rateDefaults = (limit: keyof (typeof RATE_LIMIT_DEFAULTS)['production']) =>
  `Unset: ${RATE_LIMIT_DEFAULTS.production[limit]}; \`HALO_ENV\` development or test: ${RATE_LIMIT_DEFAULTS.embedded[limit]}. \`0\`: off`;

/** The variables the gateway shares with every service: the same schemas, so one row each in docs/configuration.md. */
const shared = serviceConfigShape({ httpPort: GATEWAY_PORT });

export const gatewayConfigShape = {
  HALO_ENV: shared.HALO_ENV,
  HTTP_HOST: shared.HTTP_HOST,
  HTTP_PORT: shared.HTTP_PORT,
  CORS_ORIGINS: originListField().describe(
    "the web apps' origins that may call Halo from a browser: the gateway's CORS and WebSocket `Origin` check (auth reads " +
      'the same list for its sign-in origin check); exact origins or patterns, comma-separated ' +
      '(`https://app.example.com,https://*.example.com,http://localhost:*`), never `*` ([Calling Halo from a web app](docs/calling-halo.md#calling-halo-from-a-web-app)). Unset: none, same-origin only; ' +
      '`HALO_ENV=development` and `npm start`: `http://localhost:*,http://127.0.0.1:*`; the Helm chart: `corsOrigins`',
  ),
  METRICS_PORT: z
    .string()
    .default(String(GATEWAY_METRICS_PORT))
    .transform((v, ctx) => {
      if (v === 'off') return null;
      const port = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
      if (port <= 65535) return port;
      ctx.addIssue({ code: 'custom', message: 'must be a port (0: any free one) or off' });
      return z.NEVER;
    })
    .meta({ examples: ['9464', '0', 'off'] })
    .describe(
      "Prometheus' `GET /metrics` on its own port, bound on `HTTP_HOST`, so the public port never serves it (the services " +
        'serve theirs on their HTTP port; [docs/operations.md](docs/operations.md#logs-metrics-traces)): a port, `0` for ' +
        'any free one, or `off`. `npm start`: 9464 + `HALO_PORT_OFFSET`',
    ),
  LOG_LEVEL: shared.LOG_LEVEL,
  BODY_LIMIT: shared.BODY_LIMIT,
  SHUTDOWN_TIMEOUT_MS: shared.SHUTDOWN_TIMEOUT_MS,
  HTTP_HEADERS_TIMEOUT_MS: shared.HTTP_HEADERS_TIMEOUT_MS,
  HTTP_REQUEST_TIMEOUT_MS: shared.HTTP_REQUEST_TIMEOUT_MS,
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
    })
    .describe(
      'the proxies in front of the gateway (the ingress), comma-separated: addresses, CIDR ranges, `loopback`, `linklocal`, ' +
        "`uniquelocal`. Only their `X-Forwarded-For` is kept; anyone else's is replaced by the socket address. The Helm " +
        'chart: `loopback, linklocal, uniquelocal`',
    ),
  UPSTREAM_TIMEOUT_MS: env.int(30_000, 1).describe('idle time on an upstream (REST proxy) connection before the gateway answers 504'),
  SUPERGRAPH_PATH: z
    .string()
    .default(DEFAULT_SUPERGRAPH_PATH)
    .describe('the composed supergraph; edits are picked up without a restart (with `REGISTRY_URL`: the boot composition only)'),
  JWT_SECRET: shared.JWT_SECRET,
  AUTH_GRPC_ADDR: env.str(defaultGrpcAddr('auth')).describe("auth's gRPC address, for exchanging `X-API-Key` for a token"),
  GRPC_DEADLINE_MS: shared.GRPC_DEADLINE_MS,
  API_KEY_RECHECK_MS: env
    .int(60_000, 100)
    .describe(
      "how often an open subscription's API key is exchanged again (its token renewed; a revoked key's subscriptions end " +
        "within one period); keep it below auth's `API_KEY_TOKEN_TTL`",
    ),
  SERVICE_SIGNING_KEY: shared.SERVICE_SIGNING_KEY,
  ROUTES_PATH: z
    .string()
    .default(DEFAULT_ROUTES_PATH)
    .describe(
      'the composed REST route table (versions, deprecations); picked up without a restart (with `REGISTRY_URL`: the boot composition only)',
    ),
  OPENAPI_PATH: z
    .string()
    .default(DEFAULT_OPENAPI_PATH)
    .describe(
      'the composed OpenAPI document served at `/openapi.json` and rendered at `/docs`; picked up without a restart (with ' +
        '`REGISTRY_URL`: the boot composition only)',
    ),

  // ── GraphQL at the edge (src/graphql/limits.ts, src/graphql/persisted.ts; README "GraphQL at the edge") ──
  GRAPHQL_MAX_DEPTH: env
    .int(7, 1)
    .describe('deepest field nesting of an operation, root fields being 1 ([GraphQL at the edge](docs/graphql-edge.md))'),
  GRAPHQL_MAX_COST: env
    .int(1000, 1)
    .describe(
      'largest estimated cost of an operation (`@cost`/`@listSize` of the supergraph; [GraphQL at the edge](docs/graphql-edge.md))',
    ),
  GRAPHQL_DEFAULT_LIST_SIZE: env.int(10, 1).describe('items assumed for a list that no slicing argument or `@listSize` sizes'),
  GRAPHQL_MAX_ALIASES: env.int(15, 0).describe('aliased fields per operation (fragments included; `__typename` aliases are free)'),
  GRAPHQL_MAX_TOKENS: env.int(1000, 1).describe('lexical tokens per document (graphql-js `maxTokens`)'),
  GRAPHQL_MAX_BATCH: env.int(10, 1).describe('operations per batched request (array body)'),
  GRAPHQL_APQ_TTL_S: env.int(86_400, 1).describe('how long a persisted query (APQ) stays registered, in seconds'),
  GRAPHQL_TRUSTED_DOCUMENTS: z
    .string()
    .min(1)
    .optional()
    .describe("a persisted-query manifest (a JSON file): only its operations run (every client's list); unset: off"),
  PERSISTED_OPERATIONS: z
    .enum(PERSISTED_MODES)
    .optional()
    .describe(
      '`audit` (operations not registered for their client are served, counted and logged) or `enforce` (refused with 400) ' +
        'the operations clients registered, in the registry or `GRAPHQL_TRUSTED_DOCUMENTS` ([docs/registry.md](docs/registry.md), ' +
        '"At the gateway"); unset: `enforce` with `GRAPHQL_TRUSTED_DOCUMENTS`, else `off`',
    ),
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
    })
    .describe('client names, comma-separated, that may still send unregistered operations in `enforce` (e.g. an internal admin tool)'),
  GRAPHQL_INTROSPECTION: env
    .flag()
    .describe(
      '`__schema` / `__type` queries; off, they are 400 `INTROSPECTION_DISABLED` (HTTP and WebSocket alike; `__typename` ' +
        'still answers). Unset: off when `HALO_ENV=production`, else on. GraphiQL (development) needs it on',
    ),
  GRAPHQL_QUERY_PLAN_CACHE_MIB: env.int(30, 1).describe("memory for cached query plans (@apollo/gateway's LRU), in MiB"),
  GRAPHQL_DEDUPE_INFLIGHT: env
    .bool(true)
    .describe(
      'a subgraph fetch of a query identical to one in flight (same subgraph, document, variables and credentials) waits for ' +
        "that one's answer instead of sending its own ([GraphQL at the edge](docs/graphql-edge.md))",
    ),
  GRAPHQL_LEAN: env
    .bool(true)
    .describe(
      'a plain `POST /graphql` (one JSON operation object: `query`, optional `variables` and `operationName`, no `extensions`, ' +
        "a common `Accept`) is answered by calling @apollo/gateway's executor directly, with the same edge rules and the same " +
        'answer as Apollo Server gives, without its per-request pipeline ([ADR 0016](docs/adr/0016-lean-gateway-path.md)); an ' +
        "operation one subgraph answers whole is answered with that subgraph's data once planned " +
        '([ADR 0019](docs/adr/0019-direct-single-fetch-answers.md)); anything else, every refusal and trusted-documents mode ' +
        'still go through Apollo Server. `false`: Apollo Server answers everything',
    ),
  GRAPHQL_RESPONSE_CACHE_MIB: env
    .int(32, 0)
    .describe(
      'memory for the edge response cache, in MiB (`0`: off): anonymous queries whose answer is `public` with max-age > 0 ' +
        'and error-free are answered from this process (and, with `REDIS_URL`, shared with every replica) for that max-age, ' +
        'with `Age`, on either GraphQL path ([GraphQL at the edge](docs/graphql-edge.md))',
    ),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional()
    .describe(
      'Redis for persisted queries (APQ), the edge response cache and the rate-limit counters, shared by every replica; ' +
        'all fail open while it is down (a miss; requests uncounted). Unset: each process keeps its own',
    ),
  REDIS_KEY_PREFIX: env.str('halo:gateway:').describe("namespace of the gateway's keys in that Redis"),

  // ── Rate limits per caller (src/ratelimit; README "Limits"). Unset: the production defaults, or
  //    the embedded ones (HALO_ENV development/test) that no demo, test suite or benchmark reaches. 0: off. ──
  RATE_LIMIT_WINDOW_S: env.int(60, 1).describe('the window every rate limit is counted over, in seconds'),
  RATE_LIMIT_ANONYMOUS: optionalCount().describe(
    'requests per window per client address without credentials, then 429 with `Retry-After` and the `RateLimit` fields ' +
      "([Limits](docs/graphql-edge.md#limits)); counted in the gateway's Redis when set (fail open), else in process. " +
      rateDefaults('anonymous'),
  ),
  RATE_LIMIT_AUTHENTICATED: optionalCount().describe(`requests per window per user or API key, then 429. ${rateDefaults('authenticated')}`),
  RATE_LIMIT_GRAPHQL_COST: optionalCount().describe(
    `estimated GraphQL cost per window per caller, then 429. ${rateDefaults('graphqlCost')}`,
  ),

  // ── The schema registry (docs/registry.md "Gateway"; src/supergraph, src/usage) ──
  REGISTRY_URL: env
    .url()
    .describe(
      'the schema registry: the gateway polls `GET /v1/supergraph` (ETag) and swaps new compositions in with no failed request; ' +
        'the registry away, it keeps the last good one and `/readyz` says `registry: unreachable since …` ' +
        '([gateway/README.md](gateway/README.md#where-the-supergraph-comes-from-srcsupergraph)). Unset: the committed files, watched',
    ),
  REGISTRY_POLL_MS: env.int(2_000, 100).describe('interval of the conditional `GET /v1/supergraph`'),
  REGISTRY_BOOT_FROM_FILES: env
    .bool(false)
    .describe(
      'ready on the committed files before the registry has answered once; off, a gateway (re)started while the registry is ' +
        'away is not ready (503, the reason in `/readyz`), since it would serve an older API than its peers. `npm start`: `true`',
    ),
  USAGE_REPORTING: env
    .flag()
    .describe(
      'record which fields each operation uses (per client and hour, off the request path, bounded) and send it to the registry ' +
        'for its checks; unset: on with `REGISTRY_URL` (`true` without it is refused)',
    ),
  USAGE_FLUSH_MS: env.int(10_000, 100).describe('how often recorded usage is sent'),
  USAGE_MAX_OPERATIONS: env
    .int(5_000, 1)
    .describe('distinct (operation, client) pairs held between two sends; beyond, requests are counted as dropped'),
};

/**
 * One optional `<SERVICE>_URL` per service the gateway routes to, e.g. `CONTENT_URL` (not the
 * internal registry: its REGISTRY_URL is the gateway's own setting, docs/registry.md).
 */
export const serviceUrlShape = Object.fromEntries(
  EDGE_SERVICE_NAMES.map((name) => [
    serviceUrlVar(name),
    env
      .url()
      .describe(
        "the service's HTTP base URL: REST proxy target, its subgraph at `<url>/graphql` (and WebSocket); set, it wins over " +
          'the URL the service published with its contract. Unset: `http://127.0.0.1:<its HTTP port>`',
      ),
  ]),
);

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
