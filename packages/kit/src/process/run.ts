import { compactOnRequest } from './compact';
import { ConfigError } from '../config/config';
import { EXIT_CANNOT_START } from './exit-codes';
import { receiveLateEnv } from './late-env';
import type { Lifecycle } from './lifecycle';
import { createLogger, type Logger } from '../logging/logger';
import { reportUnhandledRejections } from './unhandled';

/**
 * A process's `main`, kept apart from the service wiring so a small process (the dev OpenID
 * provider) does not load express, Apollo and gRPC to use it.
 */
export interface RunnableService {
  lifecycle: Lifecycle;
}

/**
 * A service's `main`: take any environment the launcher hands over late (late-env.ts), load config
 * (a bad value prints one line and exits EXIT_CANNOT_START), create the logger, log and count any
 * promise rejection left unhandled instead of exiting (unhandled.ts), start the service,
 * turn SIGTERM/SIGINT into a graceful shutdown, and collect garbage when the launcher says the
 * system is idle (compact.ts).
 */
export async function runService<C extends { LOG_LEVEL: string; SHUTDOWN_TIMEOUT_MS: number }>(
  name: string,
  loadConfig: () => C,
  /** Resolves to the running service, or to nothing for a one-shot run (migrations) that is done. */
  start: (config: C, logger: Logger) => Promise<RunnableService | void>,
): Promise<void> {
  let config: C;
  try {
    await receiveLateEnv();
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(EXIT_CANNOT_START);
    }
    throw err;
  }
  const logger = createLogger(name, config.LOG_LEVEL);
  reportUnhandledRejections(logger);
  try {
    const service = await start(config, logger);
    service?.lifecycle.installSignalHandlers(config.SHUTDOWN_TIMEOUT_MS);
    if (service) compactOnRequest(logger);
  } catch (err) {
    // A setting that only start-up can judge (keys, tables, the database, a port): the same one
    // line as a bad variable, and an exit code that tells a supervisor not to try again.
    const line = cannotStartReason(err);
    if (line !== undefined) {
      process.stderr.write(`${name}: ${line}\n`);
      process.exit(EXIT_CANNOT_START);
    }
    logger.fatal({ err }, 'failed to start');
    process.exit(1);
  }
}

/** PostgreSQL's SQLSTATEs for a start that no retry can fix: no such database, login refused. */
const PG_CANNOT_START: Record<string, string> = {
  '3D000': 'the database in DATABASE_URL does not exist',
  '28P01': 'PostgreSQL refused the password in DATABASE_URL',
  '28000': 'PostgreSQL refused the login of the role in DATABASE_URL',
};

/** One readable line when `err` means the process can never start as configured, else undefined. */
export function cannotStartReason(err: unknown): string | undefined {
  if (err instanceof ConfigError) return err.message;
  const e = err as { code?: unknown; message?: unknown; address?: unknown; port?: number | string; syscall?: unknown };
  const message = typeof e.message === 'string' ? e.message : String(err);
  // grpc-js reports a taken port in its message only.
  if (e.code !== 'EADDRINUSE' && message.includes('EADDRINUSE')) return `a port is already in use (${message})`;
  if (typeof e.code !== 'string') return undefined;
  if (PG_CANNOT_START[e.code]) return `${PG_CANNOT_START[e.code]} (${message})`;
  if (e.code === 'EADDRINUSE') return `port ${String(e.port ?? '')} is already in use (${message})`;
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `unknown host: ${message}`;
  return undefined;
}
