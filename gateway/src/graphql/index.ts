/**
 * The GraphQL stage: Apollo's gateway and server behind node:http, with the edge's checks
 * (request checks, persisted and trusted documents, limits, `@authenticated`), the response
 * cache, and the subgraph fetches (keep-alive, in-flight dedupe).
 */
export {
  createGraphQL,
  type GraphQLContext,
  type GraphQLHandler,
  type GraphQLLimits,
  type GraphQLOptions,
  type OperationRequestText,
} from './engine';
export { INTROSPECTION_DISABLED, formatGatewayError } from './rules';
export { connectionContextOf } from './context';
export type { ExecuteDeferred } from './lean';
export { deferredQuery, withoutDeferDirectives, type DeferPlan } from './defer';
export { Documents, type JudgedDocument } from './documents';
export { admitOperation, type AdmittedOperation, type OperationInput, type RefusedOperation } from './operation-steps';
export { OperationPolicy, type LoadedSupergraph, type OperationLimits, type SupergraphPolicy } from './operation-policy';
export { loadTrustedDocuments, RedisQueryCache, sha256, type TrustedDocuments } from './persisted';
export {
  parseActiveOperations,
  PERSISTED_MODES,
  RegisteredOperations,
  type ActiveOperation,
  type PersistedMode,
  type RegisteredLabels,
} from './registered';
export { RedisResponseTier, ResponseCacheStore } from './response-cache';
export { deeperThan, MAX_VARIABLES_DEPTH, operationChoiceError, operationRequestError } from './request-checks';
export { analyse, readCostDirectives, type CostDirectives } from './limits';
export { dedupingFetcher } from './dedupe';
export { createHttpFetcher } from './http-fetcher';
