import { GraphQLError } from 'graphql';

/**
 * Depth and cost of an operation, before anything is planned or sent to a subgraph. The analysis
 * itself (`readCostDirectives`, `analyse`: the cost spec's rules, the compiler, its memoisation) is
 * packages/contracts/src/cost.ts, shared with the registry, which refuses a client's pushed
 * operation by the same numbers; `@halo/contracts/cost` loads graphql-js and nothing else of that
 * package. What is the gateway's own is here: the errors that refuse an operation.
 */

export {
  analyse,
  NO_COST_DIRECTIVES,
  readCostDirectives,
  type Analysis,
  type CostDirectives,
  type ListSize,
  type Variables,
} from '@halo/contracts/cost';

/** HTTP 400 MAX_DEPTH_LIMIT, with the measured depth and the limit (docs/api/graphql.md). */
export function depthLimitError(depth: number, maxDepth: number): GraphQLError {
  return new GraphQLError(`Query depth ${depth} exceeds the limit of ${maxDepth}`, {
    extensions: { code: 'MAX_DEPTH_LIMIT', depth, maxDepth, http: { status: 400 } },
  });
}

/** HTTP 400 COST_ESTIMATED_TOO_EXPENSIVE, with the estimated cost and the limit. */
export function costLimitError(cost: number, maxCost: number): GraphQLError {
  return new GraphQLError(`Query estimated cost ${cost} exceeds the limit of ${maxCost}`, {
    extensions: { code: 'COST_ESTIMATED_TOO_EXPENSIVE', cost, maxCost, http: { status: 400 } },
  });
}
