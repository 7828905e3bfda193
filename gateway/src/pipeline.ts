import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { CONNECTIONS_CHECKING, guardHttpServer, healthCheck, repeatedHeader, repeatedHeaderMessage, sendJson } from '@halo/kit/http';
import { logRequest, type Logger } from '@halo/kit/logging';
import type { Lifecycle } from '@halo/kit/process';
import type { Docs, MigrationGuides } from './docs';
import type { GraphQLHandler } from './graphql';
import {
  GatewayResponse,
  ROUTE_DOCUMENTS,
  ROUTE_GRAPHQL,
  ROUTE_GRAPHQL_STREAM,
  ROUTE_UNMATCHED,
  type GatewayMetrics,
} from './observability';
import type { RestStage } from './rest';
import type { RegistryStatus, ServedComposition } from './supergraph';
import { serveWithRequestId, type CorsStage } from './http';

/** The stages a request can reach, in the order the dispatcher asks them. */
export interface EdgeStages {
  /** CORS for every answer below, and the preflights (./http/cors.ts). */
  cors: CorsStage;
  graphql: GraphQLHandler;
  /** `/graphql/stream`: GraphQL over Server-Sent Events (src/subscriptions/sse.ts). */
  stream: (req: IncomingMessage, res: ServerResponse) => void;
  rest: RestStage;
  guides: MigrationGuides;
  docs: Docs;
  metrics: GatewayMetrics | null;
  lifecycle: Lifecycle;
  /** What `/readyz` reports. */
  served: () => ServedComposition;
  /** The registry's operation lists (PERSISTED_OPERATIONS audit or enforce with a registry), null otherwise. */
  operations: () => RegistryStatus | null;
  /** Ready on the committed files before the registry first answers (REGISTRY_BOOT_FROM_FILES). */
  registryBootFromFiles: boolean;
  logger: Logger;
}

export interface HttpServerOptions {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

const notFound = (_req: IncomingMessage, res: ServerResponse) => sendJson(res, 404, { error: 'Not found' });

/**
 * The single ingress: one raw node:http server. Per request it settles the request id and runs
 * the rest inside the request context (./request-id.ts), then dispatches: health → (access log)
 * → CORS (preflights answered there) → GraphQL → GraphQL over SSE (`/graphql/stream`) → the REST route table → migration guides and the API's documents (`/`,
 * `/openapi.json`, `/docs`) → 404. Nothing on the REST path parses more than the route table
 * needs, and bodiless requests stream through untouched.
 */
export function createHttpServer(stages: EdgeStages, opts: HttpServerOptions): Server {
  const dispatch = dispatcher(stages);
  const server = createServer({ ServerResponse: GatewayResponse, ...CONNECTIONS_CHECKING }, (req, res) =>
    serveWithRequestId(req, res, dispatch),
  );
  // Longer than common load-balancer idle timeouts, so they close idle connections first.
  server.keepAliveTimeout = 65_000;
  // A slow client holds one connection for a bounded time, then gets a contract 408.
  guardHttpServer(server, { headersTimeoutMs: opts.headersTimeoutMs, requestTimeoutMs: opts.requestTimeoutMs });
  return server;
}

/** One request, inside its context: made once per server, so a request costs no closure. */
function dispatcher(stages: EdgeStages) {
  const { cors, graphql, stream, rest, guides, docs, metrics, lifecycle, served, logger } = stages;
  const health = healthCheck(lifecycle, () => Promise.resolve());
  return (req: IncomingMessage, res: ServerResponse): void => {
    const response = res as GatewayResponse;
    // Nothing is cacheable unless what answers says so (GraphQL's hints, a service's header, the
    // documents): every error and the gateway's own answers (401, 404, 405, 413…) stay out of caches.
    res.setHeader('Cache-Control', 'no-store');
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    // Probes come every few seconds and are not worth a log line each.
    if (path === '/readyz')
      return readiness(res, lifecycle, graphql.isReady(), served(), stages.operations(), stages.registryBootFromFiles);
    if (path === '/healthz') return health(req, res, () => notFound(req, res));
    if (logger.isLevelEnabled('info')) logRequest(logger, req, res, 'path', path);
    metrics?.track(response);
    // Browsers on another origin: their preflights end here, and every answer below gets the CORS fields.
    if (cors.handle(req, response, path)) return;
    // Credentials and the payment key are single-valued: sent twice, nothing may guess which one counts.
    const repeated = repeatedHeader(req.rawHeaders);
    if (repeated !== null) {
      const message = repeatedHeaderMessage(repeated);
      return path === '/graphql' || path === '/graphql/stream'
        ? sendJson(res, 400, { errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] })
        : sendJson(res, 400, { error: message });
    }
    if (path === '/graphql') {
      response.route = ROUTE_GRAPHQL;
      // A browser opening /graphql in development gets GraphiQL; everything else is an operation.
      if (docs.graphiql(req, res)) return;
      return graphql.handle(req, res);
    }
    if (path === '/graphql/stream') {
      response.route = ROUTE_GRAPHQL_STREAM;
      return stream(req, res);
    }
    if (rest.serve(req, response, url, q, path)) return;
    // The migration guides that deprecation `Link` headers point to; the API's own documents.
    response.route = ROUTE_DOCUMENTS;
    if (guides.serve(req, res, path)) return;
    if (docs.serve(req, res, path)) return;
    response.route = ROUTE_UNMATCHED;
    return notFound(req, res);
  };
}

/**
 * `/readyz`: 200 while the gateway serves a supergraph, whatever the registry does once it has
 * answered (the last good composition keeps being served), with what it serves and the registry's
 * state as detail. A gateway whose registry has not answered since it started serves the committed
 * files, which may be older than what its peers serve: not ready then, unless
 * REGISTRY_BOOT_FROM_FILES says the files will do.
 */
function readiness(
  res: ServerResponse,
  lifecycle: Lifecycle,
  ready: boolean,
  served: ServedComposition,
  operations: RegistryStatus | null,
  bootFromFiles: boolean,
): void {
  if (!lifecycle.accepting) return sendJson(res, 503, { status: 'shutting down' });
  if (!ready) return sendJson(res, 503, { status: 'unavailable' });
  const { registry } = served;
  const detail = registry === null ? 'off' : registry.up ? 'ok' : `unreachable since ${new Date(registry.since).toISOString()}`;
  const waitingComposition = registry !== null && !registry.reached && !bootFromFiles;
  // Registered operations judge every request: until their lists came once, a replica would refuse (or miscount) what its peers serve.
  const waitingLists = operations !== null && !operations.reached && !bootFromFiles;
  const waiting = waitingComposition || waitingLists;
  sendJson(res, waiting ? 503 : 200, {
    status: waiting ? 'unavailable' : 'ready',
    ...(waitingComposition
      ? {
          reason:
            'the registry has not answered since start-up: the committed files may be older than what the other gateways serve (REGISTRY_BOOT_FROM_FILES=true accepts them)',
        }
      : waitingLists
        ? { reason: 'the registry has not answered since start-up: the registered operation lists are not loaded yet' }
        : {}),
    ...(operations !== null ? { operations: operations.up ? 'ok' : `unreachable since ${new Date(operations.since).toISOString()}` } : {}),
    composition: served.composition,
    source: served.source,
    servedSince: new Date(served.since).toISOString(),
    registry: detail,
    ...(registry && !registry.up && registry.reason ? { registryError: registry.reason } : {}),
  });
}
