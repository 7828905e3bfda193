/**
 * The auth stage: who is calling (a Bearer token, or an API key exchanged with auth) and which
 * parts of the supergraph need a caller (`@authenticated`).
 */
export { createCallerResolver, type CallerResolver } from './callers';
export { needsCaller, prepareSupergraph, readAuthPolicy, toTransportError, type AuthPolicy } from './policy';
