import type { Caller } from '@halo/kit';

/**
 * What every resolver and subgraph request sees: who asked. Which request this is lives in the
 * request context (`currentRequestId()`), not here.
 */
export interface GraphQLContext {
  /** Forwarded to subgraphs as is (for an API key: the token auth exchanged it for). */
  authorization?: string | undefined;
  caller: Caller | null;
}

/** A query or mutation as text, with its variables and name. */
export interface OperationRequestText {
  query: string;
  variables?: Record<string, unknown> | undefined;
  operationName?: string | undefined;
}
