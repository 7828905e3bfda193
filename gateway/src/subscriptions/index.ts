/**
 * The subscriptions stage: GraphQL over WebSocket (`graphql-transport-ws`) on the HTTP server's
 * port and path, forwarded to the subgraph that owns the field, entity parts fetched per event.
 */
export { CLOSE_UNAUTHORIZED, createSubscriptions, type ClientHeaders, type SubscriptionOptions } from './server';
