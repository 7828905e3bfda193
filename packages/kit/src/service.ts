import { createServer, type Server } from 'node:http';
import express, { type Express } from 'express';
import { ConfigError } from './config';
import { errorHandler, healthCheck, jsonBody, notFoundHandler, requestContext } from './http';
import { closeHttpServer, Lifecycle, listen } from './lifecycle';
import { createLogger, type Logger } from './logger';

/**
 * The express app every service starts from: health endpoints first (not logged), then request
 * id + access log, then JSON bodies with the contract's limit. Call `finishHttpApp` after the
 * service's own routes to add the 404 and the single error mapper.
 */
export function createHttpApp(opts: {
  logger: Logger;
  lifecycle: Lifecycle;
  ready: () => Promise<void>;
  bodyLimit: number;
}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(healthCheck(opts.lifecycle, opts.ready));
  app.use(requestContext(opts.logger));
  app.use(jsonBody(opts.bodyLimit));
  return app;
}

export function finishHttpApp(app: Express): Express {
  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}

/** Starts an HTTP server and registers its graceful drain on the lifecycle. */
export async function serveHttp(
  app: Express,
  opts: { port: number; host: string; lifecycle: Lifecycle; logger: Logger; drainMs: number },
): Promise<{ server: Server; port: number }> {
  const server = createServer(app);
  // Keep-alive longer than typical proxy idle timeouts, so the gateway's pooled sockets are not cut mid-request.
  server.keepAliveTimeout = 65_000;
  const port = await listen(server, opts.port, opts.host);
  opts.lifecycle.register('http server', () => closeHttpServer(server, opts.drainMs));
  opts.logger.info({ port }, 'HTTP listening');
  return { server, port };
}

export interface RunnableService {
  lifecycle: Lifecycle;
}

/**
 * A service's `main`: load config (a bad value prints one line and exits 1), create the logger,
 * start the service, and turn SIGTERM/SIGINT into a graceful shutdown.
 */
export async function runService<C extends { LOG_LEVEL: string; SHUTDOWN_TIMEOUT_MS: number }>(
  name: string,
  loadConfig: () => C,
  start: (config: C, logger: Logger) => Promise<RunnableService>,
): Promise<void> {
  let config: C;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(name, config.LOG_LEVEL);
  try {
    const service = await start(config, logger);
    service.lifecycle.installSignalHandlers(config.SHUTDOWN_TIMEOUT_MS);
  } catch (err) {
    logger.fatal({ err }, 'failed to start');
    process.exit(1);
  }
}
