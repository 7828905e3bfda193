/** GraphQL for subgraphs: error mapping, the lean request path, WebSocket subscriptions. */
export { formatGraphQLError, graphqlCaller, toGraphQLError } from './graphql';
export { asksForIntrospection, CachePolicy, enrichError, isIntrospectionField, leanRequest, type LeanRequest } from './graphql-lean';
export {
  CLOSE_GOING_AWAY,
  CLOSE_UNAUTHORIZED,
  serveSubscriptions,
  SUBSCRIPTIONS_GAUGE,
  SUBSCRIPTIONS_PATH,
  type SubscriptionServerOptions,
} from './subscriptions';
