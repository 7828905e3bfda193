import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { sha256 } from './persisted';

/**
 * GraphQL request errors that Apollo would answer with a 500 (or a 400 coded
 * INTERNAL_SERVER_ERROR): the request cannot be executed as sent, so it is HTTP 400 with a code
 * of its own, before anything runs (docs/api/graphql.md, "Request errors").
 */

/**
 * The deepest `variables` (and `extensions`) a request may nest: 64 levels. No input type of the
 * supergraph nests beyond a few levels, and graphql-js and Apollo walk variables recursively, so
 * thousands of levels overflowed the stack (a 500). 64 is the JSON nesting cap other parsers use
 * by default (e.g. Rust's serde_json allows 128); well below any stack, well above any real input.
 */
export const MAX_VARIABLES_DEPTH = 64;

/** True when `value` nests objects or arrays more than `levels` levels deep (itself being level 1). Allocates nothing. */
export function deeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (deeperThan(value[i], levels - 1)) return true;
    return false;
  }
  for (const key in value) if (deeperThan((value as Record<string, unknown>)[key], levels - 1)) return true;
  return false;
}

export interface OperationRequest {
  query?: unknown;
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
  if (deeperThan(op.variables, MAX_VARIABLES_DEPTH)) {
    return {
      message: `variables are nested deeper than ${MAX_VARIABLES_DEPTH} levels`,
      extensions: { code: 'VARIABLES_DEPTH_LIMIT', maxVariablesDepth: MAX_VARIABLES_DEPTH },
    };
  }
  if (deeperThan(op.extensions, MAX_VARIABLES_DEPTH)) {
    return {
      message: `extensions are nested deeper than ${MAX_VARIABLES_DEPTH} levels`,
      extensions: { code: 'VARIABLES_DEPTH_LIMIT', maxVariablesDepth: MAX_VARIABLES_DEPTH },
    };
  }
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
  return { query: params.get('query') ?? undefined, variables: json('variables'), extensions: json('extensions') };
}

/**
 * A document whose operation cannot be chosen: an `operationName` naming none of its operations,
 * or several operations and no `operationName`. Apollo leaves `operation` unset and the gateway's
 * executor then failed with a 500 INVALID_GRAPHQL.
 */
export function operationChoicePlugin<C extends object>(): ApolloServerPlugin<C> {
  /* eslint-disable @typescript-eslint/require-await -- Apollo Server types every plugin hook as returning a
     promise; written async, a hook that throws rejects as Apollo expects. */
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request }) {
          if (operation) return;
          const name = request.operationName;
          // An empty string is a name too (graphql-js matches it against the operations' names).
          throw typeof name === 'string'
            ? new GraphQLError(`Unknown operation named "${name}"`, {
                extensions: { code: 'UNKNOWN_OPERATION_NAME', http: { status: 400 } },
              })
            : new GraphQLError('Must provide operationName if the query contains several operations', {
                extensions: { code: 'OPERATION_NAME_REQUIRED', http: { status: 400 } },
              });
        },
      };
    },
  };
  /* eslint-enable @typescript-eslint/require-await */
}
