import { z } from 'zod';

/** A configuration error: one line that names the variable, printed before the process exits. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Reads and validates environment variables once, at start-up. The schema keys are the variable
 * names, so an error message can always say which variable is wrong.
 */
export function loadConfig<S extends z.ZodRawShape>(
  shape: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<z.ZodObject<S>> {
  const input: Record<string, string | undefined> = {};
  for (const key of Object.keys(shape)) {
    // An empty variable means "not set", as in most twelve-factor tooling.
    const raw = env[key];
    input[key] = raw === '' ? undefined : raw;
  }
  const result = z.object(shape).safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const name = String(issue.path[0] ?? 'configuration');
  const got = input[name];
  const shown = got === undefined ? 'is not set' : `got ${JSON.stringify(redactIfSecret(name, got))}`;
  throw new ConfigError(`Invalid configuration: ${name}: ${issue.message} (${shown})`);
}

function redactIfSecret(name: string, value: string): string {
  return /SECRET|PASSWORD|TOKEN|KEY/i.test(name) ? '<redacted>' : value;
}

/**
 * Reusable field types, so every service spells its variables the same way. Describe a variable
 * where it is declared, with `.describe(text)` on the field: the text is its row in
 * docs/configuration.md (`npm run docs:config`; Markdown, links as paths from the repository root).
 */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
      .transform((v) => v === 'true' || v === '1')
      .default(fallback),
  /** A true/false switch with no default, for settings whose default depends on another one. */
  flag: () =>
    z
      .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
      .transform((v) => v === 'true' || v === '1')
      .optional(),
  url: () => z.url({ message: 'must be a URL' }).optional(),
  /** A free-text reason a person wrote (an acknowledgement): trimmed, 1 to 1000 characters. */
  reason: () =>
    z
      .string()
      .trim()
      .min(1, { message: 'must be a reason (who was told, why)' })
      .max(1000, { message: 'must be at most 1000 characters' })
      .optional(),
  str: (fallback: string) => z.string().default(fallback),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('log level (pino)'),
  /** `development` enables dev defaults (demo seed, dev secrets); `production` never does. */
  haloEnv: () =>
    z
      .enum(['development', 'production', 'test'])
      .default('production')
      .describe(
        '`development` enables demo data, dev defaults and GraphiQL at `/graphql`; `production` never does, turns ' +
          'introspection off, and refuses to start with any secret or key committed to this repository (the dev JWT ' +
          "secret, the dev OIDC client secret, keys once committed for `deploy/local` or the chart's CI values, " +
          '`HALO-PLACEHOLDER-NOT-A-SECRET`): one line naming the variable, exit 1. `npm start`: `development`',
      ),
  /** A byte size such as `1mb`, `512kb` or `1048576`. */
  bytes: (fallback: string) =>
    z
      .string()
      .meta({ examples: ['1mb', '512kb', '1048576'] })
      .default(fallback)
      .transform((v, ctx) => {
        const n = parseBytes(v);
        if (n === null) {
          ctx.addIssue({ code: 'custom', message: 'must be a size like 1mb, 512kb or 1048576' });
          return z.NEVER;
        }
        return n;
      }),
};

export function parseBytes(value: string): number | null {
  const m = /^(\d+)\s*(b|kb|mb|gb)?$/i.exec(value.trim());
  if (!m) return null;
  const unit = (m[2] ?? 'b').toLowerCase();
  const factor = unit === 'gb' ? 1024 ** 3 : unit === 'mb' ? 1024 ** 2 : unit === 'kb' ? 1024 : 1;
  return Number(m[1]) * factor;
}

/** The service's own database: where it is, how it migrates, its schema and pool. */
function databaseShape() {
  return {
    DATABASE_URL: z
      .url({
        error: (issue) => (issue.input === undefined ? 'is required (npm start sets it for you)' : 'must be a postgres:// URL'),
      })
      .describe(
        "PostgreSQL URL of the service's own role ([docs/database.md](docs/database.md)); `npm start` without it runs an " +
          'embedded server and gives each service its own role',
      ),
    DATABASE_MIGRATION_URL: z
      .url({ error: 'must be a postgres:// URL' })
      .optional()
      .describe(
        'a direct PostgreSQL URL (same role) for the start-up migration alone; unset: `DATABASE_URL`. Set it when ' +
          '`DATABASE_URL` goes through a transaction pooler (PgBouncer): the migration holds a session-level advisory ' +
          'lock so that replicas starting together apply each file once, and a transaction pooler does not keep one',
      ),
    DB_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
      .optional()
      .describe("the Postgres schema the service owns; unset: the service's name (tests use throwaway ones)"),
    DB_POOL_SIZE: env.int(10, 1).describe('Postgres pool size'),
  };
}

/** The variables every service reads, with the same names in every service. */
export function serviceConfigShape(defaults: { httpPort: number; grpcPort?: number }) {
  return {
    HALO_ENV: env.haloEnv(),
    HTTP_HOST: env.str('0.0.0.0').describe('where the HTTP server listens'),
    HTTP_PORT: env.port(defaults.httpPort).describe("the HTTP server's port (`0`: any free port)"),
    GRPC_PORT: env.port(defaults.grpcPort ?? 0).describe("the gRPC server's port"),
    GRPC_HOST: z
      .string()
      .min(1)
      .optional()
      .describe(
        "where the gRPC server listens; unset: the service's `HTTP_HOST`, so a loopback-only process exposes no port " +
          'beyond loopback (`npm start`: `127.0.0.1`; the Helm chart: `0.0.0.0`, pods are called by their peers)',
      ),
    ...databaseShape(),
    LOG_LEVEL: env.logLevel(),
    BODY_LIMIT: env.bytes('1mb').describe('largest accepted request body (413 above)'),
    SHUTDOWN_TIMEOUT_MS: env.int(10_000).describe('grace period to drain in-flight requests on SIGTERM'),
    HTTP_HEADERS_TIMEOUT_MS: env
      .int(10_000, 1)
      .describe(
        'a client that has not sent its request headers by then gets 408 `{"error":"Request timeout"}` and its ' +
          'connection is closed (slow clients hold a connection only that long); the answer may take longer',
      ),
    HTTP_REQUEST_TIMEOUT_MS: env
      .int(30_000, 1)
      .describe(
        'a client that has not sent its whole request (body included) by then gets 408 `{"error":"Request timeout"}` ' +
          'and its connection is closed; the answer may take longer',
      ),
    GRPC_DEADLINE_MS: env.int(2_000, 1).describe('default deadline of outgoing gRPC calls'),
    GRPC_RETRIES: env
      .int(2, 0)
      .describe(
        'extra attempts of a gRPC read (user and product lookups, API-key exchange) whose peer was unreachable; ' +
          'exponential backoff with jitter, inside the one deadline; writes are never retried',
      ),
    GRPC_BREAKER_THRESHOLD: env
      .int(5, 1)
      .describe("consecutive unreachable or timed-out calls that open a peer's circuit (calls then fail at once with 503)"),
    GRPC_BREAKER_HALF_OPEN_MS: env.int(5_000, 1).describe('how long an open circuit fails fast before one call may try the peer again'),
    JWT_SECRET: z
      .string()
      .min(32, 'must be at least 32 bytes')
      .optional()
      .describe(
        'HS256 secret, at least 32 random bytes, shared by auth (signs; refuses to start without it) and every other ' +
          'process (verifies; without it every token is refused); `npm start`: a dev-only secret',
      ),
    SERVICE_SIGNING_KEY: z
      .string()
      .optional()
      .describe(
        "the process's private Ed25519 JWK, `kid` `<service>:<id>` (`npm run service-key -- <service>`): signs its gRPC " +
          'calls and its contract publishes; required by every gRPC caller (gateway, auth, payments, chat, registry; ' +
          '[docs/service-identity.md](docs/service-identity.md)); `npm start`: fresh dev keys each start',
      ),
    SERVICE_TRUSTED_KEYS: z
      .string()
      .optional()
      .describe(
        'JWK set of the public keys of the processes that call this one, over gRPC or with a service token as every ' +
          'process calls the registry ([docs/service-identity.md](docs/service-identity.md)); required by auth, content, ' +
          "catalog and the registry; `npm start`: its callers' keys",
      ),
  };
}

export { z };
