/** GraphQL for subgraphs: error mapping, the lean request path, WebSocket subscriptions. */
export { formatGraphQLError, graphqlCaller, toGraphQLError } from './graphql';
export { CachePolicy } from './cache-control';
export { enrichError } from './lean-answer';
export { asksForIntrospection, isIntrospectionField } from './lean-documents';
export { leanRequest, type LeanRequest } from './lean-request';
export {
  CLOSE_GOING_AWAY,
  CLOSE_UNAUTHORIZED,
  serveSubscriptions,
  SUBSCRIPTIONS_GAUGE,
  SUBSCRIPTIONS_PATH,
  type SubscriptionServerOptions,
} from './subscriptions';
