import type { Client } from 'graphql-ws';
import { GraphQLError, type DocumentNode, type GraphQLFormattedError, type OperationDefinitionNode } from 'graphql';
import type { Caller } from '@halo/kit/auth';
import type { RequestContext } from '@halo/kit/logging';
import type { DeferPlan, OperationRequestText } from '../graphql';
import type { ClientHeaders } from '../usage';
import type { SubscriptionPlan } from './plan';
import type { DirectNext } from './ws-frames';

export type { ClientHeaders };

/** One client socket, from an accepted `connection_init` until it closes. */
export interface Connection {
  /**
   * The client's name and version as it declared them (src/usage/clients.ts): each from the
   * socket's `connection_init` payload, else its upgrade request's headers; an SSE request's headers.
   */
  client: ClientHeaders;
  caller: Caller | null;
  authorization: string | undefined;
  /**
   * The request context of the upgrade: what runs for the socket (the caller's check, queries
   * and mutations through Apollo) runs in it; its id goes in the upstream connection_init and
   * entity fetches, and on the lines logged for the socket's events.
   */
  context: RequestContext;
  upstreams: Map<string, Client>;
  expiry: NodeJS.Timeout | undefined;
  /** An API key's connection: the next exchange of its key (./connection.ts `keepApiKeyFresh`). */
  renewal?: NodeJS.Timeout | undefined;
  /** Its token is an API key's, renewed by the gateway: even its unshared subscriptions hand over. */
  apiKey?: boolean;
  /** The rate limits' partition of the socket's caller (src/ratelimit), when limits are on. */
  limitKey?: string | undefined;
}

/** A query or mutation sent over the socket: it runs through the HTTP pipeline (Apollo), or in parts. */
export interface OperationContext {
  kind: 'operation';
  connection: Connection;
  request: OperationRequestText;
  /** A query's deferred fragments, planned (and their cost charged) at admission; null: answered whole. */
  defer: DeferPlan | null;
}

/** A subscription: forwarded to the subgraph that owns its root field. */
export interface SubscriptionContext {
  kind: 'subscription';
  connection: Connection;
  /** Replaced when a new supergraph plans the same subgraph subscription differently (entity fetches). */
  plan: SubscriptionPlan;
  variables: Record<string, unknown>;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** Over WebSocket: this subscription's `next` messages of a shared subscription, written straight to its socket (./ws-frames.ts). */
  direct?: DirectNext;
}

export const error = (message: string, code: string, more: Record<string, unknown> = {}) =>
  new GraphQLError(message, { extensions: { code, ...more } });

/** What a client sees of an error: message, locations, path and extensions minus the HTTP status. */
export function formatError(err: GraphQLError | GraphQLFormattedError): GraphQLFormattedError {
  const json = err instanceof GraphQLError ? err.toJSON() : err;
  if (!json.extensions) return json;
  const { http: _http, ...extensions } = json.extensions as Record<string, unknown>;
  return { ...json, extensions };
}
