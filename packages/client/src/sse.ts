/**
 * `@halo/client/sse`: the Server-Sent Events subscription transport, an entry of its own. The main
 * entry never loads it, so an app on the WebSocket transport bundles nothing of graphql-sse (whose
 * entry also holds its server and loads the `graphql` package).
 *
 *   import { createHaloClient } from '@halo/client';
 *   import { sseTransport } from '@halo/client/sse';
 *   const halo = createHaloClient({ baseUrl, subscriptions: { transport: sseTransport } });
 */
import { SseSubscriptions } from './sse-subscriptions.js';
import type { SubscriptionTransportFactory } from './subscriptions.js';

export type { SubscriptionTransportFactory, TransportContext } from './subscriptions.js';

/** Subscriptions over graphql-sse at `subscriptions.url`, by default the GraphQL path and `/stream`. */
export const sseTransport: SubscriptionTransportFactory = {
  name: 'sse',
  create: ({ url, graphqlUrl, fetch, reconnect, headers, session, apiKey, sleep }) =>
    new SseSubscriptions({ url: url ?? `${graphqlUrl}/stream`, fetch, reconnect, headers }, session, apiKey, sleep),
};
