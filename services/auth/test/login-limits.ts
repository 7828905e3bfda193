import { login, post, signUp, uniqueEmail, type TestSystem } from './helpers';

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

  it('only the last X-Forwarded-For hop (the gateway’s) is believed: rotating the entries before it dodges nothing', async () => {
    const { base } = system();
    const me = await signUp(base);
    // A private address last, as if a proxy inside the network had appended it: still the client.
    const last = `10.23.0.${++ipCounter}`;
    for (let i = 0; i < 5; i++) {
      expect((await login(base, uniqueEmail('hop'), 'password123', from(`198.51.100.${i}, ${last}`))).status).toBe(401);
    }
    expect((await login(base, me.email, me.password, from(`198.51.100.99, ${last}`))).status).toBe(429);
  });

  it('parallel guesses cannot slip past the limit together', async () => {
    const { base } = system();
    const me = await signUp(base);
    const ip = freshIp();
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () => login(base, me.email, 'wrong-password', from(ip)).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 401)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
  });
}

/** `POST /auth/register` from `ip` (through loopback, as from the gateway). */
export const registerFrom = (base: string, ip: string) =>
  post(base, '/auth/register', { name: 'Limited', email: uniqueEmail('reg'), password: 'password123' }, from(ip));

/**
 * Registration limit (REGISTER_MAX_PER_IP): `bases` are auth instances started with a limit of 3;
 * registrations are spread over them in turn (one instance, or replicas sharing a store).
 */
export async function expectRegistrationLimit(bases: string[]): Promise<void> {
  const ip = freshIp();
  for (let i = 0; i < 3; i++) expect((await registerFrom(bases[i % bases.length]!, ip)).status).toBe(201);
  const refused = await registerFrom(bases[3 % bases.length]!, ip);
  expect([refused.status, refused.body]).toEqual([429, { error: 'Too many attempts' }]);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(3500);
  expect(retryAfter).toBeLessThanOrEqual(3600);
  // Another address is not affected; a request that fails validation is not counted.
  expect((await registerFrom(bases[0]!, freshIp())).status).toBe(201);
}
