import type { Caller } from '@halo/kit/auth';
import { getOperationAST, GraphQLError, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { getVariableValues } from 'graphql/execution/values';
import type { Documents } from './documents';
import type { OperationPolicy } from './operation-policy';
import { deeperThan, MAX_VARIABLES_DEPTH, nestedTooDeep, operationChoiceError } from './request-checks';

/** One operation as a client sent it, on any transport. */
export interface OperationInput {
  query: string;
  operationName?: string | null | undefined;
  variables?: Record<string, unknown> | null | undefined;
}

/** The step that refused an operation (the lean path's reason for leaving it to Apollo Server). */
export type RefusingStep = 'document' | 'operation' | 'variables' | 'policy';

export interface AdmittedOperation {
  document: DocumentNode;
  queryHash: string;
  introspects: boolean;
  operation: OperationDefinitionNode;
  /** The variables as sent (`{}` when none): what the executor and the policy are given. */
  variables: Record<string, unknown>;
  /** The estimated cost (what the rate limits spend). */
  cost: number;
}

export interface RefusedOperation {
  step: RefusingStep;
  errors: readonly GraphQLError[];
}

/**
 * Edge steps 6 to 8, in order, for every transport that judges its operations itself (the lean
 * path, WebSocket, SSE; Apollo Server's path runs the same rules as its plugins): the document
 * (parsed and validated once per text and schema), the operation chosen, the variables (depth,
 * then coerced against the operation's definitions), the policy (depth, cost, `@authenticated`,
 * scopes). Free of side effects: nothing is spent here.
 */
export function admitOperation(
  documents: Documents,
  policy: OperationPolicy,
  schema: GraphQLSchema,
  input: OperationInput,
  caller: Caller | null,
): AdmittedOperation | RefusedOperation {
  const judged = documents.judge(schema, input.query);
  if ('errors' in judged) return { step: 'document', errors: judged.errors };
  const operation = getOperationAST(judged.document, input.operationName);
  if (!operation) return { step: 'operation', errors: [operationChoiceError(input.operationName)] };
  const variables = input.variables ?? {};
  // Coercion walks variables recursively: thousands of nested levels would overflow the stack.
  if (deeperThan(variables, MAX_VARIABLES_DEPTH)) {
    const { message, extensions } = nestedTooDeep('variables');
    return { step: 'variables', errors: [new GraphQLError(message, { extensions })] };
  }
  if (operation.variableDefinitions?.length) {
    const coerced = getVariableValues(schema, operation.variableDefinitions, variables);
    if (coerced.errors) {
      return {
        step: 'variables',
        errors: coerced.errors.map((e) => new GraphQLError(e.message, { extensions: { code: 'BAD_USER_INPUT' } })),
      };
    }
  }
  let cost: number;
  try {
    cost = policy.check(schema, judged.document, operation, variables, caller);
  } catch (err) {
    if (err instanceof GraphQLError) return { step: 'policy', errors: [err] };
    throw err;
  }
  return { document: judged.document, queryHash: judged.queryHash, introspects: judged.introspects, operation, variables, cost };
}
