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

/** Reusable field types, so every service spells its variables the same way. */
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
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `development` enables dev defaults (demo seed, dev secrets); `production` never does. */
  haloEnv: () => z.enum(['development', 'production', 'test']).default('production'),
  /** A byte size such as `1mb`, `512kb` or `1048576`. */
  bytes: (fallback: string) =>
    z
      .string()
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

/** The variables every service reads, with the same names in every service. */
export function serviceConfigShape(defaults: { httpPort: number; grpcPort?: number }) {
  return {
    HALO_ENV: env.haloEnv(),
    HTTP_HOST: env.str('0.0.0.0'),
    HTTP_PORT: env.port(defaults.httpPort),
    GRPC_PORT: env.port(defaults.grpcPort ?? 0),
    /**
     * Where gRPC listens; unset: HTTP_HOST, so a loopback-only process (`npm start`) exposes no
     * port beyond loopback. The Helm chart sets 0.0.0.0 (pods are called by their peers).
     */
    GRPC_HOST: z.string().min(1).optional(),
    /** The service's own role on its database; `npm start` sets it to its embedded server. */
    DATABASE_URL: z.url({
      error: (issue) => (issue.input === undefined ? 'is required (npm start sets it for you)' : 'must be a postgres:// URL'),
    }),
    /** The Postgres schema the service owns; defaults to the service's name (tests use throwaway ones). */
    DB_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
      .optional(),
    DB_POOL_SIZE: env.int(10, 1),
    LOG_LEVEL: env.logLevel(),
    BODY_LIMIT: env.bytes('1mb'),
    SHUTDOWN_TIMEOUT_MS: env.int(10_000),
    /** A client must have sent its request headers within this (408 otherwise). */
    HTTP_HEADERS_TIMEOUT_MS: env.int(10_000, 1),
    /** A client must have sent its whole request, body included, within this (408 otherwise). */
    HTTP_REQUEST_TIMEOUT_MS: env.int(30_000, 1),
    GRPC_DEADLINE_MS: env.int(2_000, 1),
    /** Extra attempts of a gRPC read whose peer was unreachable (src/call-policy.ts). */
    GRPC_RETRIES: env.int(2, 0),
    /** Consecutive failed gRPC attempts to one peer that open its circuit (fail fast). */
    GRPC_BREAKER_THRESHOLD: env.int(5, 1),
    /** How long an open circuit fails fast before one call may try the peer again. */
    GRPC_BREAKER_HALF_OPEN_MS: env.int(5_000, 1),
    /** HS256 secret shared with auth; when unset the service accepts no tokens at all. */
    JWT_SECRET: z.string().min(32, 'must be at least 32 bytes').optional(),
    /** This service's private Ed25519 JWK: signs its gRPC calls (docs/service-identity.md). */
    SERVICE_SIGNING_KEY: z.string().optional(),
    /** JWKS of the services allowed to call this one over gRPC. */
    SERVICE_TRUSTED_KEYS: z.string().optional(),
  };
}

export { z };
