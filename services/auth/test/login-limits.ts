import { login, signUp, uniqueEmail, type TestSystem } from './helpers';

/** The limits both rate-limit test files start auth with (small, so the tests stay fast). */
export const LIMITS = { LOGIN_MAX_FAILS_PER_EMAIL: '3', LOGIN_MAX_FAILS_PER_IP: '5', LOGIN_WINDOW_S: '900' };

let ipCounter = 0;
/** A client address of its own per test (auth trusts X-Forwarded-For from loopback, like from the gateway). */
export const freshIp = () => `203.0.113.${++ipCounter}`;
export const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** The brute-force rules, for whichever store the system was started with. */
export function loginLimitCases(system: () => TestSystem): void {
  it('after 3 failed logins for an email the next attempt is 429 with Retry-After — even with the right password', async () => {
    const { base } = system();
    const me = await signUp(base);
    const ip = freshIp();
    for (let i = 0; i < 3; i++) expect((await login(base, me.email, 'wrong-password', from(ip))).status).toBe(401);
    const blocked = await login(base, me.email, me.password, from(ip));
    expect([blocked.status, blocked.body]).toEqual([429, { error: 'Too many attempts' }]);
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect(blocked.headers.get('set-cookie')).toBeNull();
    // The email is blocked from any address (it is the account being guessed).
    expect((await login(base, me.email, me.password, from(freshIp()))).status).toBe(429);
    // Other accounts are not.
    const other = await signUp(base);
    expect((await login(base, other.email, other.password, from(ip))).status).toBe(200);
  });

  it('the email is matched case-insensitively', async () => {
    const { base } = system();
    const me = await signUp(base);
    const ip = freshIp();
    for (const email of [me.email, me.email.toUpperCase(), ` ${me.email} `]) {
      expect((await login(base, email, 'wrong-password', from(ip))).status).toBe(401);
    }
    expect((await login(base, me.email, me.password, from(ip))).status).toBe(429);
  });

  it('a successful login resets the email’s counter', async () => {
    const { base } = system();
    const me = await signUp(base);
    const ip = freshIp();
    for (let i = 0; i < 2; i++) expect((await login(base, me.email, 'wrong-password', from(ip))).status).toBe(401);
    expect((await login(base, me.email, me.password, from(ip))).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await login(base, me.email, 'wrong-password', from(ip))).status).toBe(401);
    expect((await login(base, me.email, me.password, from(ip))).status).toBe(200);
  });

  it('unknown emails are counted too', async () => {
    const { base } = system();
    const ghost = uniqueEmail('ghost');
    const ip = freshIp();
    for (let i = 0; i < 3; i++) expect((await login(base, ghost, 'password123', from(ip))).status).toBe(401);
    expect((await login(base, ghost, 'password123', from(ip))).status).toBe(429);
  });

  it('after 5 failures from one address (any emails) that address is blocked; others are not', async () => {
    const { base } = system();
    const me = await signUp(base);
    const ip = freshIp();
    for (let i = 0; i < 5; i++) expect((await login(base, uniqueEmail('spray'), 'password123', from(ip))).status).toBe(401);
    const blocked = await login(base, me.email, me.password, from(ip));
    expect([blocked.status, blocked.body]).toEqual([429, { error: 'Too many attempts' }]);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await login(base, me.email, me.password, from(freshIp()))).status).toBe(200);
  });

  it('parallel guesses cannot slip past the limit together', async () => {
    const { base } = system();
    const me = await signUp(base);
    const ip = freshIp();
    const statuses = await Promise.all(Array.from({ length: 6 }, () => login(base, me.email, 'wrong-password', from(ip)).then((r) => r.status)));
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
  });
}
