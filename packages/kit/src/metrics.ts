import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from './db';

/**
 * Prometheus metrics of one service process (prom-client): the runtime's (event loop lag, heap,
 * GC, CPU), HTTP requests by route template, gRPC calls served by method and status, the database
 * pool, and whatever the service adds (e.g. payments' idempotency outcomes). Served at `/metrics`
 * on the service's HTTP port, which only the gateway and the cluster's scraper reach — the gateway
 * never proxies it (it is in no route table). One registry per service, so tests that run several
 * services in one process keep them apart.
 */
export interface ServiceMetrics {
  registry: Registry;
  /** Express middleware timing every request; mount it first. */
  http: RequestHandler;
  /** Records one gRPC call served. */
  grpcServed(method: string, code: string, seconds: number): void;
  /** Reports the pool's connections at every scrape. */
  watchDb(db: Db): void;
  /** A counter of the service's own, registered once on this registry. */
  counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L>;
  /** A gauge (a value that goes up and down), registered once on this registry. */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L>;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(service: string): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'halo_http_request_duration_seconds',
    help: 'HTTP requests served, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
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

  return {
    registry,
    http(req: Request, res: Response, next: NextFunction) {
      if (req.path === '/metrics') return void next();
      const end = httpDuration.startTimer({ method: req.method });
      res.once('finish', () => {
        // The matched route's template (`/posts/:id`), never the raw path: bounded label values.
        const route = req.route ? `${req.baseUrl}${(req.route as { path: string }).path}` : req.baseUrl || 'unmatched';
        end({ route, status: String(res.statusCode) });
      });
      next();
    },
    grpcServed(method, code, seconds) {
      grpcDuration.observe({ method, code }, seconds);
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
