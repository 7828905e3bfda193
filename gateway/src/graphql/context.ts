import type { GraphQLDataSource } from '@apollo/gateway';
import type { IncomingMessage } from 'node:http';
import type { Caller } from '@halo/kit/auth';
import { boundRequestId } from '@halo/kit/logging';
import type { RateLimitTicket } from '../ratelimit';
import type { ClientHeaders } from '../usage';

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
  /** The operation's estimated cost, once the operation policy let it through (usage sums it). */
  cost?: number | undefined;
  /**
   * A subgraph answer the lean path already has (src/graphql/direct.ts): the data source hands it
   * to the executor's fetch of the same operation text, once, instead of fetching again.
   */
  prefetched?: Prefetched | undefined;
  /**
   * An operation sent over a socket or stream has no HTTP request of its own: the client name and
   * version its connection declared, which field usage reads in place of the request's headers.
   */
  client?: ClientHeaders | undefined;
}

/**
 * The context of an operation that came as an HTTP request (Apollo Server's path and the lean
 * path alike): the credentials as forwarded (an API key already exchanged), the request id of the
 * request's context, its rate-limit ticket.
 */
export function httpContextOf(req: IncomingMessage, caller: Caller | null, limit: RateLimitTicket | undefined): GraphQLContext {
  return { authorization: req.headers.authorization, caller, requestId: boundRequestId(req), limit };
}

/** The context of an operation sent over a socket or stream: its connection's credentials, request id and client. */
export function connectionContextOf(connection: {
  authorization: string | undefined;
  caller: Caller | null;
  context: { requestId: string };
  client: ClientHeaders;
}): GraphQLContext {
  return {
    authorization: connection.authorization,
    caller: connection.caller,
    requestId: connection.context.requestId,
    client: connection.client,
  };
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
