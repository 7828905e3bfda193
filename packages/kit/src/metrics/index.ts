/** Prometheus metrics: the process registry, HTTP and gRPC client metrics, the `/metrics` endpoint. */
export {
  createMetrics,
  createProcessRegistry,
  DROPPED_RUNTIME_GAUGES,
  grpcClientMetrics,
  type GrpcClientMetrics,
  httpRequestHistogram,
  LATENCY_BUCKETS,
  metricsEndpoint,
  type ServiceMetrics,
} from './metrics';
