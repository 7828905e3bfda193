import type { IncomingMessage, ServerResponse } from 'node:http';
import { GraphQLError } from 'graphql';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Caller } from '@halo/kit/auth';
import type { Redis } from '@halo/kit/db';
import { addressKey } from '@halo/kit/domain';
import { sendJson } from '@halo/kit/http';
import type { Logger } from '@halo/kit/logging';
import { clientOf, type TrustedProxies } from '../http';
import { checkPolicyName, limitItem, listOf, policyItem, retryAfter, type RateLimitPolicy } from './headers';

/** The limits (README "Limits"): quotas per window; 0 turns that quota off. */
export interface RateLimitConfig {
  windowSeconds: number;
  /** Requests per window per client address, for callers without credentials. */
  anonymous: number;
  /** Requests per window per user (token) or API key. */
  authenticated: number;
  /** Estimated GraphQL cost per window per caller (user, API key, else address). */
  graphqlCost: number;
  /** Namespace of the counters in Redis (REDIS_KEY_PREFIX + `ratelimit:`). */
  keyPrefix: string;
}

/** What the limits report to Prometheus (src/observability). */
export interface RateLimitCounters {
  /** The shared store (Redis) failed a call: the request went through uncounted. */
  storeError(): void;
  /** A request or operation was refused (429) by `policy`. */
  limited(policy: string): void;
}

/** A request the limits admitted: whose budget it spends and what its `RateLimit` field says so far. */
export interface RateLimitTicket {
  key: string;
  /** Its requests policy's `RateLimit` member (null: that policy is off or the store failed). */
  requests: string | null;
  res: ServerResponse;
}

export type ResponseShape = 'rest' | 'graphql';

export const TOO_MANY_REQUESTS = 'Too many requests';
export const RATE_LIMITED = 'RATE_LIMITED';

export interface RateLimits {
  /**
   * Counts one request of its caller (null: anonymous, counted by the client address the gateway
   * judged). Sets `RateLimit-Policy` and `RateLimit`; over the quota it answers 429 with
   * `Retry-After` in the stage's error shape and resolves null. A failing store lets it through.
   */
  admit(req: IncomingMessage, res: ServerResponse, caller: Caller | null, shape: ResponseShape): Promise<RateLimitTicket | null>;
  /** Spends a GraphQL operation's estimated cost; throws the 429 GraphQLError (RATE_LIMITED) when over. */
  spend(ticket: RateLimitTicket, cost: number): Promise<void>;
  /** The partition a caller's requests count under (`partitionOf`): what `charge` takes. */
  keyOf(req: IncomingMessage, caller: Caller | null): string;
  /**
   * One operation with no HTTP response of its own (a WebSocket `subscribe`): counts a request,
   * then spends its cost. Resolves the RATE_LIMITED GraphQLError to answer (with `retryAfter`
   * seconds in its extensions: there are no headers) or null when it may run.
   */
  charge(key: string, authenticated: boolean, cost: number): Promise<GraphQLError | null>;
}

/** The caller's partition: an API key, else a user, else the client address (IPv4, or IPv6 /64). */
function partitionOf(req: IncomingMessage, caller: Caller | null, trusted: TrustedProxies | null): string {
  if (caller?.apiKeyId) return `key:${caller.apiKeyId}`;
  if (caller) return `user:${caller.id}`;
  // The client as the gateway judged it (once per request, per connection when no chain is believed).
  const client = clientOf(req, trusted);
  return (client.partition ??= `addr:${addressKey(client.address)}`);
}

interface Limiter {
  policy: RateLimitPolicy;
  store: RateLimiterAbstract;
}

/** One policy's counter, in Redis or in this process; null when its quota is 0 (off). */
function limiterFor(config: RateLimitConfig, redis: Redis | null, name: string, quota: number): Limiter | null {
  if (quota <= 0) return null;
  const policy = { name: checkPolicyName(name), quota, windowSeconds: config.windowSeconds };
  const common = { keyPrefix: `${config.keyPrefix}${name}`, points: quota, duration: config.windowSeconds };
  const store = redis
    ? new RateLimiterRedis({ ...common, storeClient: redis, rejectIfRedisNotReady: true })
    : new RateLimiterMemory(common);
  return { policy, store };
}

/**
 * Consuming points: the store's answer, a RateLimiterRes (allowed or refused), or null when the
 * store failed (the request goes through: fail open), logged once per outage and counted.
 */
function failingOpen(logger: Logger, counters: RateLimitCounters | undefined) {
  let storeDown = false;
  type Taken = { res: RateLimiterRes; allowed: boolean } | null;
  const allowed = (res: RateLimiterRes): Taken => {
    if (storeDown) {
      storeDown = false;
      logger.info('rate-limit store answers again; requests are counted');
    }
    return { res, allowed: true };
  };
  const refusedOrFailed = (err: unknown): Taken => {
    if (err instanceof RateLimiterRes) return { res: err, allowed: false };
    counters?.storeError();
    if (!storeDown) {
      storeDown = true;
      logger.warn({ err: (err as Error).message }, 'rate-limit store unavailable; requests go through uncounted until it answers');
    }
    return null;
  };
  // Chained rather than async/await: one promise per request less on every proxied request.
  return (limiter: Limiter, key: string, points: number): Promise<Taken> => {
    try {
      return limiter.store.consume(key, points).then(allowed, refusedOrFailed);
    } catch (err) {
      return Promise.resolve(refusedOrFailed(err));
    }
  };
}

/**
 * Fixed-window counters per caller with rate-limiter-flexible: in Redis when the gateway has one
 * (every replica shares them), else in this process (the embedded mode). The limits fail OPEN:
 * when Redis does not answer, requests go through uncounted (a limiter must not turn a Redis
 * outage into an API outage), logged once per outage and counted by `counters.storeError`.
 * Null when every quota is 0.
 */
export function createRateLimits(opts: {
  config: RateLimitConfig;
  redis: Redis | null;
  trustedProxies: TrustedProxies | null;
  logger: Logger;
  counters?: RateLimitCounters | undefined;
}): RateLimits | null {
  const { config, redis, trustedProxies, logger, counters } = opts;
  const make = (name: string, quota: number) => limiterFor(config, redis, name, quota);
  const anonymous = make('anonymous', config.anonymous);
  const authenticated = make('authenticated', config.authenticated);
  const cost = make('graphql-cost', config.graphqlCost);
  if (!anonymous && !authenticated && !cost) return null;

  const take = failingOpen(logger, counters);
  // `RateLimit-Policy` by response shape, anonymous [0] or not [1]: the same on every answer, made once.
  const policyOf = (limiter: Limiter | null, withCost: boolean) => {
    const policies = [limiter?.policy, withCost ? cost?.policy : undefined].filter((p) => p !== undefined);
    return policies.length > 0 ? listOf(policies.map(policyItem)) : null;
  };
  const policyField: Record<ResponseShape, [string | null, string | null]> = {
    rest: [policyOf(anonymous, false), policyOf(authenticated, false)],
    graphql: [policyOf(anonymous, true), policyOf(authenticated, true)],
  };

  const refusal = (policy: RateLimitPolicy, res: RateLimiterRes) => {
    counters?.limited(policy.name);
    return new GraphQLError(TOO_MANY_REQUESTS, { extensions: { code: RATE_LIMITED, retryAfter: Number(retryAfter(res.msBeforeNext)) } });
  };

  return {
    keyOf: (req, caller) => partitionOf(req, caller, trustedProxies),
    async charge(key, isAuthenticated, points) {
      const limiter = isAuthenticated ? authenticated : anonymous;
      const counted = limiter && (await take(limiter, key, 1));
      if (limiter && counted && !counted.allowed) return refusal(limiter.policy, counted.res);
      const spent = cost && points > 0 ? await take(cost, key, points) : null;
      return cost && spent && !spent.allowed ? refusal(cost.policy, spent.res) : null;
    },
    async admit(req, res, caller, shape) {
      const key = partitionOf(req, caller, trustedProxies);
      const limiter = caller ? authenticated : anonymous;
      const policy = policyField[shape][caller ? 1 : 0];
      if (policy !== null) res.setHeader('ratelimit-policy', policy);
      if (!limiter) return { key, requests: null, res };
      const taken = await take(limiter, key, 1);
      if (taken === null) return { key, requests: null, res };
      const requests = limitItem(limiter.policy.name, taken.res.remainingPoints, taken.res.msBeforeNext);
      res.setHeader('ratelimit', requests);
      if (taken.allowed) return { key, requests, res };
      counters?.limited(limiter.policy.name);
      const headers = { 'retry-after': retryAfter(taken.res.msBeforeNext) };
      if (shape === 'rest') sendJson(res, 429, { error: TOO_MANY_REQUESTS }, headers);
      else sendJson(res, 429, { errors: [{ message: TOO_MANY_REQUESTS, extensions: { code: RATE_LIMITED } }] }, headers);
      return null;
    },
    async spend(ticket, points) {
      if (!cost || points <= 0) return;
      const taken = await take(cost, ticket.key, points);
      if (taken === null) return;
      const spent = limitItem(cost.policy.name, taken.res.remainingPoints, taken.res.msBeforeNext);
      ticket.res.setHeader('ratelimit', ticket.requests === null ? spent : listOf([ticket.requests, spent]));
      if (taken.allowed) return;
      counters?.limited(cost.policy.name);
      ticket.res.setHeader('retry-after', retryAfter(taken.res.msBeforeNext));
      throw new GraphQLError(TOO_MANY_REQUESTS, { extensions: { code: RATE_LIMITED, http: { status: 429 } } });
    },
  };
}
