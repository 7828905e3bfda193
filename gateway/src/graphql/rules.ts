import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { GraphQLError, type GraphQLFormattedError, type ValidationContext, type ValidationRule } from 'graphql';
import { INTERNAL_MESSAGE } from '@halo/kit/errors';
import { isIntrospectionField } from '@halo/kit/graphql';
import type { Logger } from '@halo/kit/logging';

/**
 * The alias cap: GraphQL Armor's max-aliases rule, reporting (not throwing, which Apollo would
 * answer with a 500) an error whose code the gateway's formatError restores (Apollo renames
 * every validation error GRAPHQL_VALIDATION_FAILED).
 */
export function aliasLimitRule(maxAliases: number): ValidationRule {
  return maxAliasesRule({
    n: maxAliases,
    propagateOnRejection: false,
    onReject: [
      (ctx: ValidationContext | null, err: GraphQLError) => {
        ctx?.reportError(
          new GraphQLError(err.message.replace(/^Syntax Error: /, ''), { extensions: { code: 'MAX_ALIASES_LIMIT', maxAliases } }),
        );
      },
    ],
  });
}

export const INTROSPECTION_DISABLED = 'INTROSPECTION_DISABLED';

/**
 * Introspection switched off (production's default): the gateway's own rule rather than Apollo's
 * `introspection: false`, so the answer has a code of its own and WebSocket operations get the
 * same rule. `__typename` stays allowed: clients need it.
 */
export const noIntrospectionRule: ValidationRule = (ctx) => ({
  Field(node) {
    if (!isIntrospectionField(node.name.value)) return;
    ctx.reportError(
      new GraphQLError('GraphQL introspection is disabled on this server (GRAPHQL_INTROSPECTION)', {
        nodes: node,
        extensions: { code: INTROSPECTION_DISABLED },
      }),
    );
  },
});

/** Limit errors raised as validation errors keep their own code (see aliasLimitRule). */
const VALIDATION_CODES_KEPT = new Set(['MAX_ALIASES_LIMIT', INTROSPECTION_DISABLED]);

/**
 * Apollo `formatError` for the gateway. Errors a subgraph reported keep their message and
 * `extensions.code` (their originalError is the subgraph's JSON, not an Error) minus the raw
 * `response` Apollo attaches to non-2xx answers (it holds internal URLs and bodies). An Error
 * thrown inside the gateway itself is logged and shown only as an internal error. (The kit's
 * formatGraphQLError is for subgraphs: it would mask every error coming from a subgraph.)
 */
export function formatGatewayError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = error instanceof GraphQLError ? error.originalError : error;
    const ownCode = original instanceof GraphQLError ? original.extensions.code : undefined;
    if (typeof ownCode === 'string' && VALIDATION_CODES_KEPT.has(ownCode)) {
      return { ...formatted, extensions: { ...formatted.extensions, code: ownCode } };
    }
    if (original instanceof Error && !(original instanceof GraphQLError)) {
      logger.error({ err: original, path: formatted.path }, 'graphql execution failed');
      return { message: INTERNAL_MESSAGE, path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
    // A request error Apollo raises without a code of its own (an unsupported persisted-query
    // version…) is the client's: never labelled an internal error.
    const status = (error instanceof GraphQLError ? (error.extensions.http as { status?: number } | undefined)?.status : undefined) ?? 0;
    if (formatted.extensions?.code === 'INTERNAL_SERVER_ERROR' && status >= 400 && status < 500) {
      return { ...formatted, extensions: { ...formatted.extensions, code: 'BAD_REQUEST' } };
    }
    if (formatted.extensions && 'response' in formatted.extensions) {
      const { response: _internal, ...extensions } = formatted.extensions;
      return { ...formatted, extensions };
    }
    return formatted;
  };
}
