import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  OperationTypeNode,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { LoadedSupergraph, OperationPolicy } from '../graphql';
import { error, type ClientHeaders, type Connection, type OperationContext, type SubscriptionContext } from './context';
import type { DocumentCache } from './documents';
import type { SubscriptionPlanner } from './planner';

/** What one operation sent over a socket or an event stream becomes: its execution arguments, or the errors to answer. */
export type Admitted =
  | readonly GraphQLError[]
  | {
      schema: GraphQLSchema;
      document: DocumentNode;
      operationName: string | undefined;
      variableValues: Record<string, unknown>;
      contextValue: OperationContext | SubscriptionContext;
      /** The operation's estimated cost (what the rate limits spend). */
      cost: number;
    };

export type UsageRecorder = (
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  headers: ClientHeaders,
) => void;

export interface SubscribePayload {
  query?: unknown;
  operationName?: string | null | undefined;
  variables?: Record<string, unknown> | null | undefined;
}

export interface Admission {
  documents: DocumentCache;
  planner: SubscriptionPlanner;
  policy: OperationPolicy;
  recordUsage: UsageRecorder | undefined;
}

/**
 * One operation sent over a socket, judged by the same code as HTTP before anything is forwarded:
 * parsed and validated (token and alias caps), its variables coerced, its depth, cost and
 * `@authenticated` fields checked; a subscription is planned too.
 */
export function admitOperation(loaded: LoadedSupergraph, connection: Connection, payload: SubscribePayload, a: Admission): Admitted {
  if (typeof payload.query !== 'string' || payload.query === '') return [error('A query is required', 'BAD_REQUEST')];
  const parsed = a.documents.get(loaded, payload.query);
  if (!('kind' in parsed)) return parsed;
  const document = parsed;
  const operationName = payload.operationName ?? undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation) return [error('Unable to identify the operation', 'BAD_REQUEST')];
  const inputs = payload.variables ?? {};
  const coerced = getVariableValues(loaded.apiSchema, operation.variableDefinitions ?? [], inputs);
  if (coerced.errors) return coerced.errors.map((e) => error(e.message, 'BAD_USER_INPUT'));
  let cost: number;
  try {
    cost = a.policy.check(loaded.apiSchema, document, operation, inputs, connection.caller);
  } catch (err) {
    if (err instanceof GraphQLError) return [err];
    throw err;
  }
  const base = { schema: loaded.apiSchema, document, operationName, variableValues: inputs, cost };
  if (operation.operation !== OperationTypeNode.SUBSCRIPTION) {
    return {
      ...base,
      contextValue: { kind: 'operation', connection, request: { query: payload.query, variables: inputs, operationName } },
    };
  }
  try {
    const plan = a.planner.planFor(loaded, document, operation);
    a.recordUsage?.(loaded.apiSchema, document, operation, connection.client);
    return { ...base, contextValue: { kind: 'subscription', connection, plan, variables: inputs, document, operation } };
  } catch (err) {
    if (err instanceof GraphQLError) return [err];
    throw err;
  }
}
