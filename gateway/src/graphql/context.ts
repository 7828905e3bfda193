import type { GraphQLDataSource } from '@apollo/gateway';
import type { Caller } from '@halo/kit';
import type { RateLimitTicket } from '../ratelimit';

/**
 * What every resolver and subgraph request sees: who asked, and which request this is (the
 * request context of the HTTP request or WebSocket, sent to subgraphs as `x-request-id`).
 */
export interface GraphQLContext {
  requestId?: string | undefined;
  /** Forwarded to subgraphs as is (for an API key: the token auth exchanged it for). */
  authorization?: string | undefined;
  caller: Caller | null;
  /** The rate limits' ticket of an HTTP request: its operations spend their cost from it. */
  limit?: RateLimitTicket | undefined;
  /**
   * A subgraph answer the lean path already has (src/graphql/direct.ts): the data source hands it
   * to the executor's fetch of the same operation text, once, instead of fetching again.
   */
  prefetched?: Prefetched | undefined;
}

/** One fetch made ahead of the executor: its answer, or what it threw. */
export type Prefetched = { query: string; response: GraphQLResponse } | { query: string; error: unknown };

/** What a subgraph data source answers (@apollo/gateway's GraphQLDataSource#process). */
export type GraphQLResponse = Awaited<ReturnType<GraphQLDataSource<GraphQLContext>['process']>>;

/** A query or mutation as text, with its variables and name. */
export interface OperationRequestText {
  query: string;
  variables?: Record<string, unknown> | undefined;
  operationName?: string | undefined;
}
