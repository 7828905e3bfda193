import { checkPolicyName, limitItem, listOf, policyItem, retryAfter, secondsFrom } from '../src/ratelimit/headers';

/**
 * The RateLimit fields as draft-ietf-httpapi-ratelimit-headers-10 writes them: Structured Field
 * Lists of Items, the policy name an sf-String, its parameters sf-Integers.
 */
describe('RateLimit-Policy', () => {
  it('names the policy as a quoted string with its quota and window', () => {
    expect(policyItem({ name: 'anonymous', quota: 300, windowSeconds: 60 })).toBe('"anonymous";q=300;w=60');
  });

  it('lists several policies in one field value', () => {
    const value = listOf([
      policyItem({ name: 'authenticated', quota: 1200, windowSeconds: 60 }),
      policyItem({ name: 'graphql-cost', quota: 100_000, windowSeconds: 60 }),
    ]);
    expect(value).toBe('"authenticated";q=1200;w=60, "graphql-cost";q=100000;w=60');
  });

  it('refuses a policy name that would need escaping', () => {
    expect(checkPolicyName('graphql-cost')).toBe('graphql-cost');
    for (const bad of ['', 'Cost', 'a"b', 'a b', '1st', 'x;q=1']) expect(() => checkPolicyName(bad)).toThrow(/must match/);
  });
});

describe('RateLimit', () => {
  it('gives the units left and the whole seconds until the window resets, rounded up', () => {
    expect(limitItem('anonymous', 12, 39_001)).toBe('"anonymous";r=12;t=40');
    expect(limitItem('anonymous', 12, 40_000)).toBe('"anonymous";r=12;t=40');
  });

  it('never writes a negative or fractional integer (a refused request can overdraw the counter)', () => {
    expect(limitItem('graphql-cost', -35, 0)).toBe('"graphql-cost";r=0;t=0');
    expect(limitItem('graphql-cost', 7.9, -5)).toBe('"graphql-cost";r=7;t=0');
  });
});

describe('Retry-After', () => {
  it('is delay-seconds, the same instant as the reset, at least 1', () => {
    expect(retryAfter(39_001)).toBe('40');
    expect(secondsFrom(39_001)).toBe(40);
    expect(retryAfter(0)).toBe('1');
    expect(retryAfter(200)).toBe('1');
  });
});
