import {
  createServer,
  ServerResponse,
  type IncomingMessage,
  type OutgoingHttpHeader,
  type OutgoingHttpHeaders,
  type Server,
} from 'node:http';
import type { ApolloServerPlugin } from '@apollo/server';
import { observedFromApollo, type OperationObserver } from './operations';
import { Counter, Histogram, type Registry } from 'prom-client';
import { sendJson } from '@halo/kit/http';
import type { Logger } from '@halo/kit/logging';
import { createProcessRegistry, grpcClientMetrics, httpRequestHistogram, LATENCY_BUCKETS, type GrpcClientMetrics } from '@halo/kit/metrics';
import { listen } from '@halo/kit/process';
import { registerWatchedMetrics, watch, type Watched, type WatchedSources } from './watched';

export type { WatchedSources };

/**
 * The gateway's Prometheus metrics (prom-client), served at `GET /metrics` on their own port
 * (`METRICS_PORT`), never on the public one:
 *
 * - `halo_http_request_duration_seconds{method,route,status}`, as every service has it: `route`
 *   is the route table's template (`/posts/:id`), `/graphql`, `/graphql/stream`, `documents` (the API's documents
 *   and migration guides) or `unmatched`, never a raw path; `status` is `aborted` when the client
 *   left before the answer was complete. Probes are not counted.
 * - `halo_proxy_upstream_duration_seconds{service,status}`: a proxied request until the service's
 *   answer headers (`status` = theirs, or `unreachable`, `timeout`, `error`).
 * - `halo_graphql_operation_duration_seconds{operation_type,operation_name,outcome}` per operation
 *   (each one of a batch, and queries and mutations sent over WebSocket), `outcome` = `ok`,
 *   `error` (the answer has errors) or `rejected` (refused before execution: parse, validation,
 *   limits, `@authenticated`, trusted documents); `halo_graphql_rejections_total{code}` by error
 *   code, requests refused before any operation (bad credentials: UNAUTHENTICATED) included.
 * - `halo_gateway_rate_limit_store_errors_total` (rate-limit checks Redis failed; they fail open)
 *   and `halo_gateway_rate_limited_total{policy}` (429s by policy: anonymous, authenticated,
 *   graphql-cost).
 * - `halo_graphql_subscriptions` (open client subscriptions), `halo_gateway_upstream_subscriptions`
 *   (those open to the subgraphs, a shared one counted once), the in-flight dedupe and the
 *   response cache (read at scrape time), gRPC calls to auth, and the Node runtime's.
 *
 * Per HTTP request the cost is one clock read and one histogram observation when the answer
 * closes, through one shared listener: the state lives on the response object itself
 * (`GatewayResponse`, the server's ServerResponse class).
 */

/** `route` of a request no route answered (404, 405, an unknown version). */
export const ROUTE_UNMATCHED = 'unmatched';
/** `route` of the API's documents (`/`, `/openapi.json`, `/docs…`) and the migration guides. */
export const ROUTE_DOCUMENTS = 'documents';
export const ROUTE_GRAPHQL = '/graphql';
/** `route` of GraphQL over Server-Sent Events: a stream is timed until it ends. */
export const ROUTE_GRAPHQL_STREAM = '/graphql/stream';

/** `route` of a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), answered or refused. */
export const ROUTE_PREFLIGHT = 'preflight';

/** The gateway's responses: where a request's metrics live until it is answered. */
export class GatewayResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** The `route` label: set by the dispatcher once it knows (a template, never the raw path). */
  route = ROUTE_UNMATCHED;
  /** When the request started (process.hrtime.bigint), when it is timed. */
  startedAt = 0n;
  /** The request's `Origin` when it is on the CORS list (null: not listed, or none). */
  allowedOrigin: string | null = null;
  /**
   * Edge headers that must hold whatever stage answers (CORS, src/http/cors.ts): called as the
   * head goes out, with the headers given to writeHead (if any) to return amended. One field
   * check per response when unset.
   */
  beforeHead: HeadHook | null = null;

  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    if (this.beforeHead !== null) {
      if (typeof reasonOrHeaders === 'string') headers = this.beforeHead(this, headers);
      else reasonOrHeaders = this.beforeHead(this, reasonOrHeaders);
    }
    return super.writeHead(statusCode, reasonOrHeaders as string, headers);
  }
}

/** See GatewayResponse.beforeHead. */
export type HeadHook = (
  res: GatewayResponse,
  headers: OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined,
) => OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;

/** Operation and error-code names a client chose: bounded (the first `max` valid ones, then `other`). */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(
    private readonly max: number,
    private readonly pattern: RegExp,
  ) {}

  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max || !this.pattern.test(value)) return 'other';
    this.seen.add(value);
    return value;
  }
}

/** How many distinct operation names get their own series. */
export const MAX_OPERATION_NAMES = 200;
const OPERATION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/** Status labels made once, not per request. */
const STATUS_LABELS = Array.from({ length: 600 }, (_, i) => String(i));
const statusLabel = (status: number) => STATUS_LABELS[status] ?? String(status);

export type UpstreamOutcome = number | 'unreachable' | 'timeout' | 'error';

export interface GatewayMetrics {
  /** Starts timing a request the gateway answers (its `route` is set as dispatch learns it). */
  track(res: GatewayResponse): void;
  /** One proxied request, until the service's answer headers (or its failure). */
  upstream(service: string, outcome: UpstreamOutcome, startedAt: bigint): void;
  /** The Apollo Server plugin that times every operation. */
  graphqlPlugin<C extends object>(): ApolloServerPlugin<C>;
  /** What that plugin records of an answered operation (the lean path calls it too, ADR 0016). */
  observeOperation: OperationObserver;
  /** An HTTP operation while the lean path is on: answered by it, or left to Apollo Server (and why). */
  leanAnswered: (by: 'lean' | 'direct' | 'cache' | 'apollo', reason?: string) => void;
  /**
   * One operation judged against the registered operations (PERSISTED_OPERATIONS audit or
   * enforce), by client and version as the lists name them (`other` otherwise) and whether it was registered.
   */
  registeredOperation: (labels: { client: string; version: string; registered: 'true' | 'false' }) => void;
  /** The rate limits' counters (src/ratelimit): store failures (failed open) and refusals by policy. */
  rateLimit: { storeError(): void; limited(policy: string): void };
  /** gRPC calls the gateway makes (auth's API-key exchange). */
  grpcClient: GrpcClientMetrics;
  /** Values read at every scrape: open subscriptions, dedupe and response-cache counters. */
  watch(sources: WatchedSources): void;
  /** `GET /metrics` on its own server: resolves to the port it listens on. */
  listen(host: string, port: number): Promise<{ server: Server; port: number }>;
  /** The whole text, as a scrape gets it (tests). */
  text(): Promise<string>;
}

const codeOf = (error: Error) => (error as { extensions?: { code?: unknown } }).extensions?.code;
const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

export function createGatewayMetrics(logger: Logger): GatewayMetrics {
  const registry = createProcessRegistry('gateway');
  const http = httpRequestHistogram(registry);
  const upstream = new Histogram({
    name: 'halo_proxy_upstream_duration_seconds',
    help: "Proxied REST requests until the service's answer headers, by service and its status (or unreachable, timeout, error)",
    labelNames: ['service', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const operations = new Histogram({
    name: 'halo_graphql_operation_duration_seconds',
    help: 'GraphQL operations, by type, name (bounded) and outcome (ok, error, rejected before execution)',
    labelNames: ['operation_type', 'operation_name', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const rejections = new Counter({
    name: 'halo_graphql_rejections_total',
    help: 'GraphQL operations and requests refused before execution, by error code',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const lean = new Counter({
    name: 'halo_graphql_lean_requests_total',
    help: "HTTP /graphql operations while the lean path is on (ADR 0016), by who answered: lean (the executor), direct (one subgraph's data as it came, ADR 0019), cache (the edge response cache), or apollo (left to Apollo Server, with the reason)",
    labelNames: ['by', 'reason'] as const,
    registers: [registry],
  });
  lean.inc({ by: 'lean' }, 0);
  lean.inc({ by: 'direct' }, 0);
  lean.inc({ by: 'cache' }, 0);
  const storeErrors = new Counter({
    name: 'halo_gateway_rate_limit_store_errors_total',
    help: 'Rate-limit checks the shared store (Redis) failed: the request went through uncounted (fail open)',
    registers: [registry],
  });
  const limited = new Counter({
    name: 'halo_gateway_rate_limited_total',
    help: 'Requests and GraphQL operations refused with 429, by rate-limit policy',
    labelNames: ['policy'] as const,
    registers: [registry],
  });
  const registered = new Counter({
    name: 'halo_graphql_registered_operations_total',
    help: 'GraphQL operations judged against the registered operation lists (PERSISTED_OPERATIONS audit or enforce), by client and version (as the lists name them, else other; none: no version sent) and whether the operation was registered for its client',
    labelNames: ['client', 'version', 'registered'] as const,
    registers: [registry],
  });
  const names = new BoundedLabel(MAX_OPERATION_NAMES, OPERATION_NAME);
  const codes = new BoundedLabel(50, ERROR_CODE);
  const grpcClient = grpcClientMetrics(registry);

  const watched: Watched = { current: {}, registryUp: null };
  registerWatchedMetrics(registry, watched);

  // One listener for every response: `this` is the response.
  function observeRequest(this: GatewayResponse): void {
    const status = this.writableFinished ? statusLabel(this.statusCode) : 'aborted';
    http.observe({ method: this.req.method ?? 'GET', route: this.route, status }, seconds(this.startedAt));
  }

  const reject = (code: unknown) => rejections.inc({ code: typeof code === 'string' ? codes.of(code) : 'UNKNOWN' });
  const observeOperation = operationObserver(operations, names, reject);

  return {
    grpcClient,
    rateLimit: { storeError: () => storeErrors.inc(), limited: (policy) => limited.inc({ policy }) },
    track(res) {
      res.startedAt = process.hrtime.bigint();
      res.on('close', observeRequest);
    },
    upstream(service, outcome, startedAt) {
      upstream.observe({ service, status: typeof outcome === 'number' ? statusLabel(outcome) : outcome }, seconds(startedAt));
    },
    graphqlPlugin: () => operationMetricsPlugin(observeOperation, reject),
    observeOperation,
    leanAnswered: (by, reason) => lean.inc(reason === undefined ? { by } : { by, reason }),
    registeredOperation: (labels) => registered.inc(labels),
    watch: (next) => watch(registry, watched, next),
    listen: (host, port) => serveMetrics(registry, logger, host, port),
    text: () => registry.metrics(),
  };
}

/** `GET /metrics` on a server of its own (`METRICS_PORT`), never the public one. */
async function serveMetrics(registry: Registry, logger: Logger, host: string, port: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    res.setHeader('cache-control', 'no-store');
    if (path !== '/metrics') return sendJson(res, 404, { error: 'Not found' });
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' });
    registry.metrics().then(
      (text) => {
        res.setHeader('content-type', registry.contentType);
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        logger.error({ err }, 'metrics could not be collected');
        sendJson(res, 500, { error: 'Internal server error' });
      },
    );
  });
  return { server, port: await listen(server, port, host) };
}

/** One answered operation, timed; a refused one (errors, no `data`, nothing crashed) counted by its code. */
function operationObserver(
  operations: Histogram<'operation_type' | 'operation_name' | 'outcome'>,
  names: BoundedLabel,
  reject: (code: unknown) => void,
): OperationObserver {
  return ({ operation, requestedName, result, crashed, startedAt }) => {
    // A request error (GraphQL spec): errors and no `data`, nothing was executed.
    const rejected = result.errors !== undefined && !('data' in result) && !crashed;
    const outcome = rejected ? 'rejected' : result.errors?.length ? 'error' : 'ok';
    if (rejected) reject(result.errors![0]?.extensions?.code);
    // A resolved operation's own name; otherwise the name the client sent, if any.
    const name = operation ? operation.name?.value : requestedName;
    operations.observe(
      {
        operation_type: operation?.operation ?? 'unknown',
        operation_name: name ? names.of(name) : operation ? 'anonymous' : 'unknown',
        outcome,
      },
      seconds(startedAt),
    );
  };
}

/** The Apollo Server plugin that times every operation and counts the refused ones by code. */
function operationMetricsPlugin<C extends object>(observe: OperationObserver, reject: (code: unknown) => void): ApolloServerPlugin<C> {
  /* eslint-disable @typescript-eslint/require-await -- Apollo Server types every plugin hook as returning a
     promise; written async, a hook that throws rejects as Apollo expects. */
  return {
    // The whole request was refused before any operation: bad credentials (401), a bad body.
    async contextCreationDidFail({ error }) {
      reject(codeOf(error));
    },
    async invalidRequestWasReceived({ error }) {
      reject(codeOf(error));
    },
    async requestDidStart() {
      const startedAt = process.hrtime.bigint();
      let executed = false;
      let crashed = false;
      return {
        async executionDidStart() {
          executed = true;
          return {
            async executionDidEnd(err) {
              if (err) crashed = true;
            },
          };
        },
        async willSendResponse(context) {
          observe(observedFromApollo(context, executed && crashed, startedAt));
        },
      };
    },
  };
  /* eslint-enable @typescript-eslint/require-await */
}
