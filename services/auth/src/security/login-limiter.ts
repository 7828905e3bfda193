import { unavailable, type HaloError, type Logger, type Redis } from '@halo/kit';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LoginLimiter } from '../domain/accounts';
import { addressKey } from '../domain/limits';
import { retryAfterSeconds, sha256Hex, TooManyAttempts } from '../domain/tokens';

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
  const make = (prefix: string, points: number): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({
          storeClient: redis,
          keyPrefix: `${limits.keyPrefix}:${prefix}`,
          points,
          duration: limits.windowSeconds,
          rejectIfRedisNotReady: true,
        })
      : new RateLimiterMemory({ keyPrefix: `${limits.keyPrefix}:${prefix}`, points, duration: limits.windowSeconds });
  const byEmail = make('login-email', limits.maxFailsPerEmail);
  const byIp = make('login-ip', limits.maxFailsPerIp);
  // The email is hashed: the store needs a key, not anyone's address.
  const emailKey = (email: string) => sha256Hex(email.toLowerCase());

  const storeDown = (err: unknown): HaloError => {
    logger.error({ err }, 'login limiter store unavailable; refusing logins');
    return unavailable();
  };

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
