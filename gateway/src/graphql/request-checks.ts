import type { ApolloServerPlugin } from '@apollo/server';
import { getOperationAST, GraphQLError, OperationTypeNode, parse, type GraphQLFormattedError } from 'graphql';
import { deeperThan, MAX_JSON_DEPTH } from '@halo/kit/http';
import { sha256 } from './persisted';

/**
 * GraphQL request errors that Apollo would answer with a 500 (or a 400 coded
 * INTERNAL_SERVER_ERROR): the request cannot be executed as sent, so it is HTTP 400 with a code
 * of its own, before anything runs (docs/api/graphql.md, "Request errors").
 */

/**
 * The deepest `variables` (and `extensions`) a request may nest: the kit's cap on every JSON body
 * (64 levels). No input type of the supergraph nests beyond a few levels, and graphql-js and
 * Apollo walk variables recursively, so thousands of levels overflowed the stack (a 500).
 */
export const MAX_VARIABLES_DEPTH = MAX_JSON_DEPTH;

/** Shared with every service's JSON body check (@halo/kit's http/json-depth.ts). */
export { deeperThan };

/** The refusal of variables or extensions nested past MAX_VARIABLES_DEPTH, on every transport. */
export const nestedTooDeep = (what: 'variables' | 'extensions') => ({
  message: `${what} are nested deeper than ${MAX_VARIABLES_DEPTH} levels`,
  extensions: { code: 'VARIABLES_DEPTH_LIMIT', maxVariablesDepth: MAX_VARIABLES_DEPTH },
});

export interface OperationRequest {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
  extensions?: unknown;
}

/**
 * The request error of one operation as sent (one item of a batch, or a GET's parameters, already
 * JSON-decoded), or null when Apollo may take it: variables or extensions nested deeper than the
 * cap, or a persisted-query hash that is not the SHA-256 of the query sent with it.
 */
export function operationRequestError(op: OperationRequest): GraphQLFormattedError | null {
  // The variables object is level 1: `{"v": 1}` is one level deep, `{"v": {"w": 1}}` two.
  if (deeperThan(op.variables, MAX_VARIABLES_DEPTH)) return nestedTooDeep('variables');
  if (deeperThan(op.extensions, MAX_VARIABLES_DEPTH)) return nestedTooDeep('extensions');
  const persisted = (op.extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery;
  // Only a registration (hash and query together) can mismatch; the hash alone is a lookup.
  if (
    typeof persisted?.sha256Hash === 'string' &&
    typeof op.query === 'string' &&
    op.query !== '' &&
    sha256(op.query) !== persisted.sha256Hash
  ) {
    return { message: 'provided sha does not match query', extensions: { code: 'PERSISTED_QUERY_HASH_MISMATCH' } };
  }
  return null;
}

/** A GET's `variables` and `extensions` parameters, decoded as Apollo will; undefined if absent or not JSON. */
export function getOperationRequest(search: string): OperationRequest {
  const params = new URLSearchParams(search);
  const json = (name: string): unknown => {
    const raw = params.get(name);
    if (raw === null) return undefined;
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      // Apollo answers malformed JSON parameters itself (400).
      return undefined;
    }
  };
  return {
    query: params.get('query') ?? undefined,
    operationName: params.get('operationName') ?? undefined,
    variables: json('variables'),
    extensions: json('extensions'),
  };
}

/**
 * A GET whose operation is a subscription: Apollo refuses any GET that is not a query with 405
 * before the plugins see it; a subscription gets the same 400 as over POST, naming where it is
 * served. Parsed only when the text could hold one; a document that does not parse is Apollo's
 * to answer (GRAPHQL_PARSE_FAILED).
 */
export function getSubscriptionError(op: OperationRequest): GraphQLFormattedError | null {
  if (typeof op.query !== 'string' || !op.query.includes('subscription')) return null;
  let operation;
  try {
    operation = getOperationAST(parse(op.query), typeof op.operationName === 'string' ? op.operationName : undefined);
  } catch {
    return null;
  }
  return operation?.operation === OperationTypeNode.SUBSCRIPTION
    ? { message: SUBSCRIPTION_OVER_HTTP, extensions: { code: 'SUBSCRIPTION_OVER_HTTP' } }
    : null;
}

/** A subscription sent as a plain HTTP request: where it is served instead. */
export const SUBSCRIPTION_OVER_HTTP =
  'Subscriptions are served over WebSocket (graphql-transport-ws at /graphql) and Server-Sent Events (/graphql/stream), not over POST or GET /graphql';

/**
 * A document whose operation cannot be chosen: an `operationName` naming none of its operations,
 * or several operations and no `operationName`. Apollo leaves `operation` unset and the gateway's
 * executor then failed with a 500 INVALID_GRAPHQL. A subscription over POST or GET (the executor
 * cannot run one: a 500 before) is a request error too.
 */
export function operationChoicePlugin<C extends object>(): ApolloServerPlugin<C> {
  /* eslint-disable @typescript-eslint/require-await -- Apollo Server types every plugin hook as returning a
     promise; written async, a hook that throws rejects as Apollo expects. */
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request }) {
          // Before the cost is spent (the policy's plugin comes after this one): nothing runs.
          if (operation?.operation === OperationTypeNode.SUBSCRIPTION) {
            throw new GraphQLError(SUBSCRIPTION_OVER_HTTP, { extensions: { code: 'SUBSCRIPTION_OVER_HTTP', http: { status: 400 } } });
          }
          if (!operation) throw operationChoiceError(request.operationName);
        },
      };
    },
  };
  /* eslint-enable @typescript-eslint/require-await */
}

/**
 * Why no operation of a document could be chosen, on every transport (this plugin's HTTP
 * answer, a WebSocket or SSE operation): an unknown name, or none given for several operations.
 */
export function operationChoiceError(operationName: string | null | undefined): GraphQLError {
  // An empty string is a name too (graphql-js matches it against the operations' names).
  return typeof operationName === 'string'
    ? new GraphQLError(`Unknown operation named "${operationName}"`, {
        extensions: { code: 'UNKNOWN_OPERATION_NAME', http: { status: 400 } },
      })
    : new GraphQLError('Must provide operationName if the query contains several operations', {
        extensions: { code: 'OPERATION_NAME_REQUIRED', http: { status: 400 } },
      });
}
