import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  closeHttpServer,
  healthCheck,
  Lifecycle,
  listen,
  REQUEST_ID_HEADER,
  requestIdOf,
  sendJson,
  type Logger,
} from '@halo/kit';
import { hasBody, isEncoded, isJsonType, parseJson, readBody, sendBodyError } from './body';
import type { GatewayConfig } from './config';
import { createGraphQL } from './graphql';
import { createServiceProxies, type ServiceProxies } from './proxy';
import { createRouteTable, ROUTES, type RouteDef } from './routes';

export interface Gateway {
  server: Server;
  /** Every resource in shutdown order; `main` hands it the signals. */
  lifecycle: Lifecycle;
  /** Loads the supergraph, starts Apollo, then listens (`HTTP_PORT` 0 picks a free port). */
  start(): Promise<{ port: number }>;
  /** Graceful: stop accepting, drain, stop Apollo and the gateway, drop upstream pools. */
  stop(): Promise<void>;
}

const notFound = (_req: IncomingMessage, res: ServerResponse) => sendJson(res, 404, { error: 'Not found' });

/**
 * The single ingress: one raw node:http server. Per request it settles the request id, then
 * dispatches: health → (access log) → GraphQL → the REST route table → 404. Nothing on the REST path parses
 * more than the route table needs, and bodiless requests stream through untouched.
 */
export function createGateway(config: GatewayConfig, logger: Logger): Gateway {
  const lifecycle = new Lifecycle(logger);
  const routes = createRouteTable(ROUTES);
  const proxies = createServiceProxies({
    targets: config.serviceUrls,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    logger,
  });
  const graphql = createGraphQL({
    supergraphPath: config.SUPERGRAPH_PATH,
    serviceUrls: config.serviceUrls,
    bodyLimit: config.BODY_LIMIT,
    logger,
  });
  const health = healthCheck(lifecycle, async () => {
    if (!graphql.isReady()) throw new Error('supergraph not loaded');
  });

  const server = createServer((req, res) => {
    const requestId = requestIdOf(req);
    // Set on the request so the proxy and the subgraph fetches forward it upstream.
    req.headers[REQUEST_ID_HEADER] = requestId;
    res.setHeader('X-Request-Id', requestId);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    // Probes come every few seconds and are not worth a log line each.
    if (path === '/healthz' || path === '/readyz') return health(req, res, () => notFound(req, res));
    if (logger.isLevelEnabled('info')) accessLog(logger, req, res, requestId, path);
    if (path === '/graphql') return graphql.handle(req, res, requestId);

    const match = routes.match(req.method ?? 'GET', path);
    if (match.kind === 'route') return proxyRest(match.route, req, res, proxies, config.BODY_LIMIT, logger);
    if (match.kind === 'method-not-allowed') {
      return sendJson(res, 405, { error: 'Method not allowed' }, { allow: match.allow });
    }
    return notFound(req, res);
  });
  // Longer than common load-balancer idle timeouts, so they close idle connections first.
  server.keepAliveTimeout = 65_000;

  // Released in reverse: the server drains first, then GraphQL stops, then the upstream pools go.
  lifecycle.register('upstream pools', () => proxies.close());
  lifecycle.register('graphql', () => graphql.stop());
  lifecycle.register('http server', () => closeHttpServer(server, config.SHUTDOWN_TIMEOUT_MS));

  return {
    server,
    lifecycle,
    async start() {
      await graphql.start();
      const port = await listen(server, config.HTTP_PORT, config.HTTP_HOST);
      logger.info({ port, host: config.HTTP_HOST }, 'gateway listening');
      return { port };
    },
    stop: () => lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS),
  };
}

/**
 * A route's request goes to its service. Without a body it streams straight through. With one,
 * the body is read here first (limit → 413, malformed JSON → 400), then those bytes are sent.
 */
function proxyRest(
  route: RouteDef,
  req: IncomingMessage,
  res: ServerResponse,
  proxies: ServiceProxies,
  bodyLimit: number,
  logger: Logger,
): void {
  if (!hasBody(req)) return proxies.forward(route.service, req, res);
  readBody(req, bodyLimit).then(
    (body) => {
      try {
        // A compressed body is the service's to decode (and judge); only plain JSON is checked.
        if (!isEncoded(req) && isJsonType(req.headers['content-type'])) parseJson(body);
      } catch (err) {
        return sendBodyError(res, err, logger);
      }
      proxies.forward(route.service, req, res, body);
    },
    (err: unknown) => sendBodyError(res, err, logger),
  );
}

/**
 * One line per request, only when info is enabled. The path is logged without its query string:
 * queries can carry credentials (an OAuth callback's `code`) and logs must never hold those.
 */
function accessLog(logger: Logger, req: IncomingMessage, res: ServerResponse, requestId: string, path: string): void {
  const start = process.hrtime.bigint();
  // 'close' also fires when the client leaves before the answer is complete ('finish' does not).
  res.once('close', () => {
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const line = { requestId, method: req.method, path, status: res.statusCode, ms };
    logger.info(res.writableFinished ? line : { ...line, aborted: true }, 'request');
  });
}
