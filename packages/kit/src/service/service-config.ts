import { ConfigError, env, loadConfig, serviceConfigShape, type z } from '../config/config';
import { refuseDevSecrets } from '../config/dev-secrets';
import { SERVICES, type ServiceName } from '../config/topology';

/** A process's environment, or a test's stand-in for it. */
export type Env = Record<string, string | undefined>;

/** What the kit reads for every service: the shared variables plus the demo-seed switch. */
export function kitConfigShape(name: ServiceName) {
  return {
    ...serviceConfigShape(SERVICES[name]),
    SEED_DEMO_DATA: env
      .flag()
      .describe(
        "seed the service's demo data (content: users, posts and comments; auth: their passwords; catalog: 42 products); " +
          'idempotent; unset: on only when `HALO_ENV=development`; refused when `HALO_ENV=production`',
      ),
    HALO_MIGRATE_ONLY: env
      .flag()
      .describe("apply the service's migrations and exit 0 without serving (the chart's migration Job); exit 1 if they fail"),
    REGISTRY_URL: env
      .url()
      .describe(
        "the schema registry's HTTP base, where the service publishes its contract ([docs/registry.md](docs/registry.md)); " +
          '`npm start` sets it',
      ),
    SERVICE_PUBLIC_URL: env
      .url()
      .describe(
        "the routing URL the service publishes with its contract; unset: `http://127.0.0.1:<HTTP_PORT>` (the chart sets the Service's cluster DNS name)",
      ),
    REGISTRY_PUBLISH_ON_START: env
      .flag()
      .describe('publish the contract after start (needs `REGISTRY_URL`); `npm start` sets it; refused when `HALO_ENV=production`'),
    HALO_PUBLISH_CONTRACT_ONLY: env
      .flag()
      .describe(
        'publish the contract and exit without serving: 0 published, 1 refused, 3 registry unreachable, 78 a configuration ' +
          "that can never start (the chart's post-install/post-upgrade hook); needs `REGISTRY_URL` and `SERVICE_SIGNING_KEY`, reads nothing else " +
          'of the service (no database, secret or peer)',
      ),
    REGISTRY_PUBLISH_ACKNOWLEDGE: env
      .reason()
      .describe("the reason a publish lets breaking changes through with (the registry records it; the chart's `publish.acknowledge`)"),
    GRAPHQL_LEAN: env
      .bool(true)
      .describe(
        '`false`: every `/graphql` request of a subgraph goes through express and Apollo Server, as before the lean path ' +
          '([ADR 0015](docs/adr/0015-lean-subgraph-path.md)); the answers are the same either way',
      ),
  };
}

/** The variables a service reads: the kit's and the service's own (`X`, which wins on a shared name). */
export function serviceShape<X extends z.ZodRawShape = Record<never, never>>(name: ServiceName, extra?: X) {
  return { ...kitConfigShape(name), ...extra } as KitShape & X;
}

type KitShape = ReturnType<typeof kitConfigShape>;

/** The settings the kit itself reads, SEED_DEMO_DATA resolved to a boolean. */
export type KitConfig = Omit<z.infer<z.ZodObject<KitShape>>, 'SEED_DEMO_DATA'> & { SEED_DEMO_DATA: boolean };

/** A service's settings: the kit's and the service's own shape `X`. */
export type ServiceConfig<X extends z.ZodRawShape = Record<never, never>> = KitConfig & z.infer<z.ZodObject<X>>;

/** Loads and validates a service's settings once; the demo-seed rule lives here and nowhere else. */
export function loadServiceConfig<X extends z.ZodRawShape = Record<never, never>>(
  name: ServiceName,
  extra?: X,
  source: Env = process.env,
): ServiceConfig<X> {
  const loaded = loadConfig(serviceShape(name, extra), source);
  const seed = (loaded as { SEED_DEMO_DATA?: boolean }).SEED_DEMO_DATA;
  const haloEnv = (loaded as { HALO_ENV: string }).HALO_ENV;
  refuseDevSecrets(source, haloEnv);
  if (seed && haloEnv === 'production') {
    throw new ConfigError('Invalid configuration: SEED_DEMO_DATA: demo data is never seeded when HALO_ENV=production');
  }
  const registry = loaded as { REGISTRY_URL?: string; REGISTRY_PUBLISH_ON_START?: boolean; HALO_PUBLISH_CONTRACT_ONLY?: boolean };
  // In a cluster a contract is published once the release is ready (the Helm hook), never by every replica at start.
  if (registry.REGISTRY_PUBLISH_ON_START && haloEnv === 'production') {
    throw new ConfigError(
      'Invalid configuration: REGISTRY_PUBLISH_ON_START: refused when HALO_ENV=production (the release hook publishes, HALO_PUBLISH_CONTRACT_ONLY)',
    );
  }
  if (registry.HALO_PUBLISH_CONTRACT_ONLY) requireRegistryUrl(registry.REGISTRY_URL, 'HALO_PUBLISH_CONTRACT_ONLY');
  else if (registry.REGISTRY_PUBLISH_ON_START) requireRegistryUrl(registry.REGISTRY_URL, 'REGISTRY_PUBLISH_ON_START');
  return { ...loaded, SEED_DEMO_DATA: seed ?? haloEnv === 'development' } as unknown as ServiceConfig<X>;
}

/**
 * What HALO_PUBLISH_CONTRACT_ONLY (the Helm chart's publish hook) reads, and nothing more: where
 * the registry is, the URL to publish, the key that signs the publish. The hook's pod gets no
 * database credentials, JWT secret, Redis or peer addresses, so none is required here.
 */
export function publishConfigShape(name: ServiceName) {
  const kit = kitConfigShape(name);
  return {
    HALO_ENV: kit.HALO_ENV,
    HTTP_PORT: kit.HTTP_PORT,
    LOG_LEVEL: kit.LOG_LEVEL,
    SHUTDOWN_TIMEOUT_MS: kit.SHUTDOWN_TIMEOUT_MS,
    SERVICE_SIGNING_KEY: kit.SERVICE_SIGNING_KEY,
    REGISTRY_URL: kit.REGISTRY_URL,
    SERVICE_PUBLIC_URL: kit.SERVICE_PUBLIC_URL,
    HALO_PUBLISH_CONTRACT_ONLY: kit.HALO_PUBLISH_CONTRACT_ONLY,
    REGISTRY_PUBLISH_ACKNOWLEDGE: kit.REGISTRY_PUBLISH_ACKNOWLEDGE,
  };
}

export type PublishConfig = z.infer<z.ZodObject<ReturnType<typeof publishConfigShape>>>;

/** Whether `source` asks for the publish hook (HALO_PUBLISH_CONTRACT_ONLY, read as the flag it is). */
export function publishOnlyRequested(source: Env = process.env): boolean {
  return loadConfig({ HALO_PUBLISH_CONTRACT_ONLY: env.flag() }, source).HALO_PUBLISH_CONTRACT_ONLY === true;
}

/** The publish hook's settings (publishConfigShape); the same refusals as a serving process's. */
export function loadPublishConfig(name: ServiceName, source: Env = process.env): PublishConfig {
  const loaded = loadConfig(publishConfigShape(name), source);
  refuseDevSecrets(source, loaded.HALO_ENV);
  requireRegistryUrl(loaded.REGISTRY_URL, 'HALO_PUBLISH_CONTRACT_ONLY');
  return loaded;
}

/** Publishing (at start or as the hook) needs to know where the registry is. */
function requireRegistryUrl(url: string | undefined, publishedBy: 'HALO_PUBLISH_CONTRACT_ONLY' | 'REGISTRY_PUBLISH_ON_START'): void {
  if (!url) throw new ConfigError(`Invalid configuration: REGISTRY_URL: is required with ${publishedBy}`);
}
