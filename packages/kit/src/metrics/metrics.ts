import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/db';
import { unhandledRejectionCount } from '../process/unhandled';

/**
 * Prometheus metrics of one service process (prom-client): the runtime's (event loop lag, heap,
 * GC, CPU), HTTP requests by route template, gRPC calls served by method and status, gRPC calls
 * made to peers, the database pool, and whatever the service adds (e.g. payments' idempotency
 * outcomes). Served at `/metrics` on the service's HTTP port, which only the gateway and the
 * cluster's scraper reach — the gateway never proxies it (it is in no route table). One registry
 * per service, so tests that run several services in one process keep them apart. The gateway
 * builds its own registry from the same parts (gateway/src/observability/metrics.ts).
 */
export interface ServiceMetrics {
  registry: Registry;
  /** Express middleware timing every request; mount it first. */
  http: RequestHandler;
  /** Times one request served outside express (the lean `/graphql` path), labelled with `route()` when it finishes. */
  timeRequest(req: IncomingMessage, res: ServerResponse, route: () => string): void;
  /** Records one gRPC call served. */
  grpcServed(method: string, code: string, seconds: number): void;
  /** gRPC calls this process makes to its peers (give it to `callPolicyFor`). */
  readonly grpcClient: GrpcClientMetrics;
  /** Reports the pool's connections at every scrape. */
  watchDb(db: Db): void;
  /** A counter of the service's own, registered once on this registry. */
  counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L>;
  /** A gauge (a value that goes up and down), registered once on this registry. */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L>;
}

/** Seconds: from a millisecond cache hit to a request that hit a 10 s deadline. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * prom-client's runtime gauges whose names end in `_total`, a suffix the exposition format reserves
 * for counters (`promtool check metrics` refuses them). Each is the sum of the gauge of the same
 * name without the suffix, labelled by `type` (`sum by (service) (nodejs_active_handles)`), so
 * leaving them out loses nothing.
 */
export const DROPPED_RUNTIME_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** A process's registry: every series labelled `service=<name>`, with the Node runtime's metrics and the count of unhandled rejections (unhandled.ts). */
export function createProcessRegistry(name: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: name });
  collectDefaultMetrics({ register: registry });
  for (const gauge of DROPPED_RUNTIME_GAUGES) registry.removeSingleMetric(gauge);
  new Counter({
    name: 'halo_unhandled_rejections_total',
    help: 'Promise rejections no code handled (each one a bug; logged, and the process goes on)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(unhandledRejectionCount());
    },
  });
  return registry;
}

/** `halo_http_request_duration_seconds{method,route,status}`, the same series on every process. */
export function httpRequestHistogram(registry: Registry): Histogram<'method' | 'route' | 'status'> {
  return new Histogram({
    name: 'halo_http_request_duration_seconds',
    help: 'HTTP requests served, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
}

/** Paths that never count as requests: the scrape itself and the probes (not logged either). */
const UNTIMED = new Set(['/metrics', '/healthz', '/readyz']);

export function createMetrics(service: string): ServiceMetrics {
  const registry = createProcessRegistry(service);
  const httpDuration = httpRequestHistogram(registry);
  const grpcDuration = new Histogram({
    name: 'halo_grpc_server_handling_seconds',
    help: 'gRPC calls served, by method and status code (refusals by service identity included)',
    labelNames: ['method', 'code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const dbs: Db[] = [];
  new Gauge({
    name: 'halo_db_pool_connections',
    help: 'Database pool connections by state (total, idle, waiting callers)',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const db of dbs) {
        const s = db.poolStats();
        this.inc({ state: 'total' }, s.total);
        this.inc({ state: 'idle' }, s.idle);
        this.inc({ state: 'waiting' }, s.waiting);
      }
    },
  });

  let grpcClient: GrpcClientMetrics | undefined;
  const timedSeries = new Map<string, ReturnType<typeof httpDuration.labels>>();

  return {
    registry,
    http(req: Request, res: Response, next: NextFunction) {
      if (UNTIMED.has(req.path)) return void next();
      const end = httpDuration.startTimer({ method: req.method });
      res.once('finish', () => {
        // The matched route's template (`/posts/:id`), never the raw path: bounded label values.
        const route = req.route ? `${req.baseUrl}${(req.route as { path: string }).path}` : req.baseUrl || 'unmatched';
        end({ route, status: String(res.statusCode) });
      });
      next();
    },
    timeRequest(req, res, route) {
      const start = process.hrtime.bigint();
      res.once('finish', () => {
        // The series' child kept by its labels: no label object hashed per request.
        const path = route();
        const key = `${req.method} ${path} ${res.statusCode}`;
        let child = timedSeries.get(key);
        if (child === undefined) timedSeries.set(key, (child = httpDuration.labels(req.method ?? '', path, String(res.statusCode))));
        child.observe(Number(process.hrtime.bigint() - start) / 1e9);
      });
    },
    grpcServed(method, code, seconds) {
      grpcDuration.observe({ method, code }, seconds);
    },
    // Made on first use: a service that calls no peer shows no empty gRPC client series.
    get grpcClient() {
      return (grpcClient ??= grpcClientMetrics(registry));
    },
    watchDb(db) {
      dbs.push(db);
    },
    counter(name, help, labelNames) {
      const existing = registry.getSingleMetric(name);
      if (existing) return existing as Counter<(typeof labelNames)[number]>;
      return new Counter({ name, help, labelNames, registers: [registry] });
    },
    gauge(name, help, labelNames) {
      const existing = registry.getSingleMetric(name);
      if (existing) return existing as Gauge<(typeof labelNames)[number]>;
      return new Gauge({ name, help, labelNames, registers: [registry] });
    },
  };
}

/**
 * gRPC calls a process makes to its peers, as src/call-policy.ts sees them: one observation per
 * call (its attempts and backoffs included, as the caller waited), the retries it took, and each
 * peer's circuit breaker.
 */
export interface GrpcClientMetrics {
  /**
   * One call: `method` as the servers label it (`halo.content.v1.UserService/GetUser`), `code` the
   * final gRPC status name, or `CIRCUIT_OPEN` when the open breaker failed it without sending it.
   */
  call(peer: string, method: string, code: string, seconds: number, retries: number): void;
  /** The breaker of a call policy: reported at every scrape (1 while not closed). */
  watchBreaker(peer: string, notClosed: () => boolean): void;
  /** The breaker of `peer` opened (counted: an opening between two scrapes still shows). */
  breakerOpened(peer: string): void;
}

export function grpcClientMetrics(registry: Registry): GrpcClientMetrics {
  const duration = new Histogram({
    name: 'halo_grpc_client_handling_seconds',
    help: 'gRPC calls made to peers, by peer, method and final status code (retries included)',
    labelNames: ['peer', 'method', 'code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'halo_grpc_client_retries_total',
    help: 'Extra attempts of gRPC reads whose peer was unreachable, by peer and method',
    labelNames: ['peer', 'method'] as const,
    registers: [registry],
  });
  const opened = new Counter({
    name: 'halo_grpc_client_breaker_opened_total',
    help: 'Times the circuit breaker to a peer opened (calls then fail fast)',
    labelNames: ['peer'] as const,
    registers: [registry],
  });
  const breakers: { peer: string; notClosed: () => boolean }[] = [];
  new Gauge({
    name: 'halo_grpc_client_breaker_open',
    help: 'Whether the circuit breaker to a peer is open or half-open (1) or closed (0)',
    labelNames: ['peer'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const open = new Map<string, number>();
      for (const b of breakers) open.set(b.peer, Math.max(open.get(b.peer) ?? 0, b.notClosed() ? 1 : 0));
      for (const [peer, value] of open) this.set({ peer }, value);
    },
  });
  return {
    call(peer, method, code, seconds, retried) {
      duration.observe({ peer, method, code }, seconds);
      if (retried > 0) retries.inc({ peer, method }, retried);
    },
    watchBreaker(peer, notClosed) {
      breakers.push({ peer, notClosed });
      // The peer shows (at 0) before its first opening.
      opened.inc({ peer }, 0);
    },
    breakerOpened(peer) {
      opened.inc({ peer });
    },
  };
}

/** `GET /metrics` in Prometheus' text format. */
export function metricsEndpoint(metrics: ServiceMetrics): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' || req.path !== '/metrics') return void next();
    metrics.registry
      .metrics()
      .then((text) => {
        res.setHeader('content-type', metrics.registry.contentType);
        res.setHeader('cache-control', 'no-store');
        res.end(text);
      })
      .catch(next);
  };
}
