import { resolve } from 'node:path';
import {
  defaultGrpcAddr,
  defaultServiceUrl,
  env,
  GATEWAY_PORT,
  loadConfig,
  SERVICE_NAMES,
  serviceUrlVar,
  z,
  type ServiceName,
} from '@halo/kit';
import { toHttpDate, type VersioningConfig } from './versioning';

/** The composed supergraph committed beside the package (`npm run compose` writes it). */
export const DEFAULT_SUPERGRAPH_PATH = resolve(__dirname, '../supergraph.graphql');

/** v1 of the products routes: announced with v2 (issue 4), switched off nine months later. */
export const DEFAULT_V1_PRODUCTS_SUNSET = 'Wed, 01 Sep 2027 00:00:00 GMT';
export const V1_TO_V2_GUIDE = '/docs/migrations/v1-to-v2.md';

const httpDate = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const date = toHttpDate(v);
      if (date === null) {
        ctx.addIssue({ code: 'custom', message: 'must be an HTTP-date (Wed, 01 Sep 2027 00:00:00 GMT) or an ISO-8601 date' });
        return z.NEVER;
      }
      return date;
    });

export const gatewayConfigShape = {
  HALO_ENV: env.haloEnv(),
  HTTP_HOST: env.str('0.0.0.0'),
  HTTP_PORT: env.port(GATEWAY_PORT),
  LOG_LEVEL: env.logLevel(),
  BODY_LIMIT: env.bytes('1mb'),
  SHUTDOWN_TIMEOUT_MS: env.int(10_000),
  /** Idle time on an upstream connection before the gateway answers 504. */
  UPSTREAM_TIMEOUT_MS: env.int(30_000, 1),
  SUPERGRAPH_PATH: z.string().default(DEFAULT_SUPERGRAPH_PATH),
  /** HS256 secret shared with auth; without it every token is refused (anonymous calls only). */
  JWT_SECRET: z.string().min(32, 'must be at least 32 bytes').optional(),
  /** auth's gRPC address, for exchanging `X-API-Key` for a token. */
  AUTH_GRPC_ADDR: env.str(defaultGrpcAddr('auth')),
  GRPC_DEADLINE_MS: env.int(2_000, 1),
  /** Version 1 of the products routes answers with Deprecation, Sunset and Link (CONTRACT.md). */
  API_V1_PRODUCTS_DEPRECATED: env.bool(true),
  API_V1_PRODUCTS_SUNSET: httpDate(DEFAULT_V1_PRODUCTS_SUNSET),
  /** The migration guide the Link header names: an absolute URL, or a path the gateway serves. */
  API_V1_PRODUCTS_LINK: z
    .string()
    .regex(/^(https?:\/\/|\/)[^\s<>]*$/, 'must be an absolute URL or a path starting with /')
    .default(V1_TO_V2_GUIDE),
};

/** One optional `<SERVICE>_URL` per service of the topology table, e.g. `CONTENT_URL`. */
const serviceUrlShape = Object.fromEntries(SERVICE_NAMES.map((name) => [serviceUrlVar(name), env.url()]));

export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

/**
 * Reads the gateway's environment once. A bad value throws the kit's one-line ConfigError.
 * `serviceUrls` holds each service's HTTP base URL (no trailing slash): REST is proxied to it and
 * its subgraph is `<base>/graphql`, so one variable moves both.
 */
export function loadGatewayConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(gatewayConfigShape, source);
  const urls = loadConfig(serviceUrlShape, source);
  const serviceUrls = {} as Record<ServiceName, string>;
  for (const name of SERVICE_NAMES) {
    serviceUrls[name] = (urls[serviceUrlVar(name)] ?? defaultServiceUrl(name)).replace(/\/+$/, '');
  }
  return { ...config, serviceUrls, versioning: versioningConfig(config) };
}

/**
 * The REST API versions (src/versioning.ts). Version 2 exists for the routes whose RouteDef lists
 * it, served by their service under `/v2`; version 1 of the products routes is deprecated.
 */
function versioningConfig(config: z.infer<z.ZodObject<typeof gatewayConfigShape>>): VersioningConfig {
  return {
    defaultVersion: 1,
    versions: {
      1: {
        upstreamPrefix: '',
        deprecations: config.API_V1_PRODUCTS_DEPRECATED
          ? [{ pathPrefix: '/products', sunset: config.API_V1_PRODUCTS_SUNSET, link: config.API_V1_PRODUCTS_LINK }]
          : [],
      },
      2: { upstreamPrefix: '/v2' },
    },
  };
}
