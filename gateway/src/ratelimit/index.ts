/**
 * Rate limits at the edge, per caller, for REST and GraphQL (README "Limits"): requests per
 * window, and GraphQL's estimated cost spent from a budget, with the IETF `RateLimit` fields.
 */
export {
  createRateLimits,
  RATE_LIMITED,
  TOO_MANY_REQUESTS,
  type RateLimitConfig,
  type RateLimitCounters,
  type RateLimits,
  type RateLimitTicket,
  type ResponseShape,
} from './limiter';
export { limitItem, listOf, policyItem, retryAfter, type RateLimitPolicy } from './headers';
