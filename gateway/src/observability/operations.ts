import type { GraphQLRequestContextWillSendResponse } from '@apollo/server';
import type { DocumentNode, FormattedExecutionResult, GraphQLSchema, OperationDefinitionNode } from 'graphql';

/**
 * One operation answered, as the metrics and usage observe it: the same function is called by
 * their Apollo Server plugins and by the lean path (ADR 0016).
 */
export interface ObservedOperation {
  schema: GraphQLSchema;
  document: DocumentNode | undefined;
  operation: OperationDefinitionNode | undefined;
  /** The name the client sent (used when no operation was resolved). */
  requestedName: string | undefined;
  /** The variables as sent (usage reads the enum values in them). */
  variables: Readonly<Record<string, unknown>> | null | undefined;
  /** The estimated cost the operation policy let through; undefined when it was refused before. */
  cost: number | undefined;
  /** The answer as sent (errors formatted). */
  result: FormattedExecutionResult;
  /** Execution started and threw (a crash, not a refusal). */
  crashed: boolean;
  /** `process.hrtime.bigint()` when the request started. */
  startedAt: bigint;
  /** A request header; for an operation sent over a socket or stream, the client headers its connection declared. */
  header: (name: string) => string | undefined;
}

export type OperationObserver = (observed: ObservedOperation) => void;

/** What Apollo Server's `willSendResponse` hook knows, as an observer reads it (both plugins call this). */
export function observedFromApollo(
  { schema, document, operation, request, response, contextValue }: GraphQLRequestContextWillSendResponse<object>,
  crashed: boolean,
  startedAt: bigint,
): ObservedOperation {
  const body = response.body;
  return {
    schema,
    document,
    operation,
    requestedName: request.operationName,
    variables: request.variables,
    cost: (contextValue as { cost?: number }).cost,
    result: body.kind === 'single' ? body.singleResult : body.initialResult,
    crashed,
    startedAt,
    // No `http` (graphql-ws, graphql-sse: Apollo's executeOperation): what the connection declared (GraphQLContext `client`).
    header: request.http
      ? (name) => request.http!.headers.get(name)
      : (name) => (contextValue as { client?: Readonly<Record<string, string | undefined>> }).client?.[name],
  };
}
