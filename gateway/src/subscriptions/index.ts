/**
 * The subscriptions stage: GraphQL over WebSocket (`graphql-transport-ws`) on the HTTP server's
 * port and path, and over Server-Sent Events (the graphql-sse protocol) at `/graphql/stream`;
 * forwarded to the subgraph that owns the field, entity parts fetched per event.
 */
export { createSubscriptions, type SubscriptionOptions } from './server';
export { CLOSE_UNAUTHORIZED } from './connection';
export type { ClientHeaders } from './context';
