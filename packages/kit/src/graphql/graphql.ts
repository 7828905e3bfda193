import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ERROR_KINDS, INTERNAL_MESSAGE, isHaloError, type HaloError } from '../errors/errors';
import { callerFromHeader, type Caller } from '../auth/jwt';
import type { Logger } from '../logging/logger';

/** GraphQL: a HaloError becomes a GraphQLError with `extensions.code` from the kit's table. */
export function toGraphQLError(err: HaloError): GraphQLError {
  return new GraphQLError(err.message, { extensions: { code: ERROR_KINDS[err.kind].graphql, ...err.extra } });
}

/**
 * Apollo `formatError`: resolver errors that are HaloErrors keep their message and get their code;
 * GraphQL's own errors (validation, parsing, BAD_USER_INPUT…) pass through; anything else is an
 * internal error whose details are logged, never shown.
 */
export function formatGraphQLError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = error instanceof GraphQLError ? error.originalError : error;
    if (isHaloError(original)) {
      return {
        ...formatted,
        message: original.message,
        extensions: { code: ERROR_KINDS[original.kind].graphql, ...original.extra },
      };
    }
    if (original && !(original instanceof GraphQLError)) {
      logger.error({ err: original, path: formatted.path }, 'resolver failed');
      return { message: INTERNAL_MESSAGE, path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
    return formatted;
  };
}

/**
 * The caller for a GraphQL context. An invalid token stops the whole request with HTTP 401 and
 * code UNAUTHENTICATED (spec: authentication failures use the transport status), before execution.
 */
export function graphqlCaller(authorization: string | undefined, secret: string | undefined): Caller | null {
  try {
    return callerFromHeader(authorization, secret);
  } catch (err) {
    if (!isHaloError(err)) throw err;
    throw new GraphQLError(err.message, {
      extensions: { code: ERROR_KINDS[err.kind].graphql, http: { status: err.httpStatus } },
    });
  }
}
