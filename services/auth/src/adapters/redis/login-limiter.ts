import type { Redis } from '@halo/kit/db';
import { unavailable, type HaloError } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LoginLimiter, RegistrationLimiter } from '../../domain/accounts';
import { addressKey } from '../../domain/limits';
import { retryAfterSeconds, sha256Hex, TooManyAttempts } from '../../domain/tokens';

export interface LoginLimits {
  maxFailsPerEmail: number;
  maxFailsPerIp: number;
  windowSeconds: number;
  /** Keeps the counters of one deployment (or one test file) apart from every other's. */
  keyPrefix: string;
}

/**
 * Brute-force protection for login, with rate-limiter-flexible: one counter per email and one per
 * client address, both over a fixed window. Every attempt is counted BEFORE the password is
 * checked (atomically, so parallel guesses cannot slip past the check together), and a correct
 * password gives its point back — so the counters hold failed attempts, and the attempt after the
 * N-th failure is refused with 429 even when its password is right. A success resets the email's
 * counter. Addresses are counted per IPv4 address or IPv6 /64 (`addressKey`). When Redis is
 * configured but unreachable the limiter fails closed: 503.
 */
export function createLoginLimiter(limits: LoginLimits, redis: Redis | null, logger: Logger): LoginLimiter {
  const make = (prefix: string, points: number) => counter(redis, `${limits.keyPrefix}:${prefix}`, points, limits.windowSeconds);
  const byEmail = make('login-email', limits.maxFailsPerEmail);
  const byIp = make('login-ip', limits.maxFailsPerIp);
  // The email is hashed: the store needs a key, not anyone's address.
  const emailKey = (email: string) => sha256Hex(email.toLowerCase());

  const storeDown = (err: unknown) => limiterDown(logger, 'logins', err);

  return {
    async before(email, ip) {
      const results = await Promise.allSettled([byEmail.consume(emailKey(email)), byIp.consume(addressKey(ip))]);
      let blockedMs = 0;
      for (const r of results) {
        if (r.status === 'fulfilled') continue;
        // A rejection with a RateLimiterRes means "over the limit"; anything else is the store failing.
        if (!(r.reason instanceof RateLimiterRes)) throw storeDown(r.reason);
        blockedMs = Math.max(blockedMs, r.reason.msBeforeNext);
      }
      if (blockedMs > 0) throw new TooManyAttempts(retryAfterSeconds(blockedMs));
    },
    async succeeded(email, ip) {
      try {
        await Promise.all([byEmail.delete(emailKey(email)), byIp.reward(addressKey(ip), 1)]);
      } catch (err) {
        // The login itself succeeded; a counter left one too high only matters at the limit.
        logger.warn({ err }, 'could not reset login counters');
      }
    },
  };
}

/** One fixed-window counter, in Redis (shared by every replica) or in this process. */
function counter(redis: Redis | null, keyPrefix: string, points: number, duration: number): RateLimiterAbstract {
  return redis
    ? new RateLimiterRedis({ storeClient: redis, keyPrefix, points, duration, rejectIfRedisNotReady: true })
    : new RateLimiterMemory({ keyPrefix, points, duration });
}

function limiterDown(logger: Logger, what: string, err: unknown): HaloError {
  logger.error({ err }, `rate limiter store unavailable; refusing ${what}`);
  return unavailable();
}

export interface RegistrationLimits {
  maxPerIp: number;
  windowSeconds: number;
  keyPrefix: string;
}

/**
 * Registrations per client address (`addressKey`: IPv4 address or IPv6 /64) over a fixed window,
 * with the login limiter's store: every registration that reaches the store counts, accepted or
 * not (a duplicate email too, so the limit also caps probing which emails exist). Fails closed.
 */
export function createRegistrationLimiter(limits: RegistrationLimits, redis: Redis | null, logger: Logger): RegistrationLimiter {
  const byIp = counter(redis, `${limits.keyPrefix}:register-ip`, limits.maxPerIp, limits.windowSeconds);
  return {
    async consume(ip) {
      try {
        await byIp.consume(addressKey(ip));
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw limiterDown(logger, 'registrations', err);
        throw new TooManyAttempts(retryAfterSeconds(err.msBeforeNext));
      }
    },
  };
}
