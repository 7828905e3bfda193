/** What the gateway tells about itself: Prometheus metrics on their own port. (The access log is the kit's.) */
export {
  BoundedLabel,
  createGatewayMetrics,
  GatewayResponse,
  MAX_OPERATION_NAMES,
  ROUTE_DOCUMENTS,
  ROUTE_GRAPHQL,
  ROUTE_GRAPHQL_STREAM,
  ROUTE_PREFLIGHT,
  ROUTE_UNMATCHED,
  type GatewayMetrics,
  type HeadHook,
  type UpstreamOutcome,
  type WatchedSources,
} from './metrics';
export { observedFromApollo, type ObservedOperation, type OperationObserver } from './operations';
