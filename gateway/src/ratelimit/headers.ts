/**
 * The `RateLimit-Policy` and `RateLimit` response fields of the IETF httpapi draft "RateLimit
 * header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-10; -08 and later share this
 * syntax), plus `Retry-After`. Both fields are Structured Field Lists (RFC 9651) of Items whose
 * value is the policy's name as an sf-String, with Integer parameters:
 *
 *   RateLimit-Policy: "anonymous";q=300;w=60
 *   RateLimit: "anonymous";r=12;t=40
 *
 * `q` is the quota, `w` the window in seconds, `r` the quota units left, `t` the seconds until
 * the window resets (the same instant as `Retry-After` on a 429). Several policies are listed
 * comma-separated in one field each (GraphQL: the requests policy, then the cost policy).
 */

/** A policy as the gateway enforces it: `quota` units per `windowSeconds`. */
export interface RateLimitPolicy {
  /** The policy's name: lower-case letters, digits and `-` (so it never needs escaping). */
  name: string;
  quota: number;
  windowSeconds: number;
}

const POLICY_NAME = /^[a-z][a-z0-9-]*$/;

/** An sf-Integer: a non-negative whole number (the draft's parameters are never negative). */
const sfInteger = (n: number): string => String(Math.max(0, Math.floor(n)));

/** Throws when a policy name could not be written as a plain sf-String (a programming error). */
export function checkPolicyName(name: string): string {
  if (!POLICY_NAME.test(name)) throw new Error(`rate-limit policy name ${JSON.stringify(name)} must match ${POLICY_NAME.source}`);
  return name;
}

/** One member of `RateLimit-Policy`: `"name";q=<quota>;w=<window>`. */
export function policyItem(policy: RateLimitPolicy): string {
  return `"${policy.name}";q=${sfInteger(policy.quota)};w=${sfInteger(policy.windowSeconds)}`;
}

/** Seconds a client waits for `ms` to pass, rounded up (0 ms left → 0). */
export const secondsFrom = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));

/** One member of `RateLimit`: `"name";r=<remaining>;t=<seconds until reset>`. */
export function limitItem(name: string, remaining: number, msBeforeReset: number): string {
  return `"${name}";r=${sfInteger(remaining)};t=${secondsFrom(msBeforeReset)}`;
}

/** Several members of one List field, as one field value. */
export const listOf = (items: readonly string[]): string => items.join(', ');

/** `Retry-After` in delay-seconds: at least 1, so a client never retries at once into the same refusal. */
export const retryAfter = (msBeforeReset: number): string => String(Math.max(1, secondsFrom(msBeforeReset)));
