import { request } from 'node:http';
import { SERVICE_TOKEN_METADATA } from '@halo/kit/auth';
import { testIdentity } from '@halo/kit/testing';
import { login, post, signUp, uniqueEmail, type TestSystem } from './helpers';

/** The limits both rate-limit test files start auth with (small, so the tests stay fast). */
export const LIMITS = { LOGIN_MAX_FAILS_PER_EMAIL: '3', LOGIN_MAX_FAILS_PER_IP: '5', LOGIN_WINDOW_S: '900' };

let ipCounter = 0;
/** A client address of its own per test. */
export const freshIp = () => `203.0.113.${++ipCounter}`;

/**
 * The gateway's service token for auth, as its REST proxy attaches it (minted before each file's
 * tests; valid for minutes): the only thing that makes auth believe forwarded headers.
 */
let gatewayToken = '';
beforeAll(async () => {
  gatewayToken = await testIdentity('gateway').tokenFor('auth');
});
/** What the gateway sends auth: its token, and forwarded headers (X-Forwarded-For, -Host, -Proto). */
export const viaGateway = (forwarded: Record<string, string>) => ({ ...forwarded, [SERVICE_TOKEN_METADATA]: gatewayToken });
let peerCounter = 1;
/** A loopback address of its own to connect from (Linux routes all of 127/8 to loopback): a peer whose counter no other test shares. */
const freshPeer = () => `127.0.${Math.floor(++peerCounter / 250)}.${(peerCounter % 250) + 2}`;

/** `POST /auth/login` over a connection from `peer` (wrong password unless given). */
function loginFrom(base: string, peer: string, email: string, headers: Record<string, string>, password = 'wrong-password') {
  const body = JSON.stringify({ email, password });
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const req = request(`${base}/auth/login`, {
      method: 'POST',
      localAddress: peer,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A request from `ip`, as the gateway forwards it. */
export const from = (ip: string) => viaGateway({ 'x-forwarded-for': ip });

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

  it('without the gateway’s token X-Forwarded-For is not believed: rotating it dodges nothing', async () => {
    const { base } = system();
    const me = await signUp(base);
    const peer = freshPeer();
    const services = await testIdentity('registry').tokenFor('auth');
    // Straight to auth's port (any pod could), a fresh address each time, with no token, a
    // forged one or another service's: all count as the peer (its socket address).
    const tokens: Record<string, string>[] = [{}, { [SERVICE_TOKEN_METADATA]: 'forged' }, { [SERVICE_TOKEN_METADATA]: services }];
    for (let i = 0; i < 5; i++) {
      const headers = { 'x-forwarded-for': freshIp(), ...tokens[i % tokens.length] };
      expect((await loginFrom(base, peer, uniqueEmail('direct'), headers)).status).toBe(401);
    }
    const blocked = await loginFrom(base, peer, me.email, { 'x-forwarded-for': freshIp() }, me.password);
    expect([blocked.status, blocked.body]).toEqual([429, { error: 'Too many attempts' }]);
    // From the gateway (its token), its client address counts: another one is not blocked.
    expect((await loginFrom(base, peer, me.email, from(freshIp()), me.password)).status).toBe(200);
  });

  it('one address written four ways is one counter', async () => {
    const { base } = system();
    const me = await signUp(base);
    const n = ++ipCounter;
    // Five failures (the limit), each address spelled another way.
    const v4 = `10.66.0.${n}`;
    const spellings = [
      v4,
      `::ffff:${v4}`,
      `0:0:0:0:0:ffff:${v4}`,
      `::FFFF:0a42:${n.toString(16).padStart(4, '0')}`,
      `::ffff:a42:${n.toString(16)}`,
    ];
    for (const spelling of spellings) expect((await login(base, uniqueEmail('spell'), 'password123', from(spelling))).status).toBe(401);
    expect((await login(base, me.email, me.password, from(v4))).status).toBe(429);
  });

  it('an address not written the standard way (`010.066.000.001`) is no counter of its own: the peer’s counts', async () => {
    const { base } = system();
    const peer = freshPeer();
    // Each a fresh spelling: as counters of their own none would ever be blocked.
    const loose = (i: number) => `010.066.${String(i).padStart(3, '0')}.001`;
    for (let i = 0; i < 5; i++) expect((await loginFrom(base, peer, uniqueEmail('loose'), from(loose(i)))).status).toBe(401);
    expect((await loginFrom(base, peer, uniqueEmail('loose'), from(loose(5)))).status).toBe(429);
    // It was the peer that was counted: the same peer without any forwarded address is blocked too.
    expect((await loginFrom(base, peer, uniqueEmail('loose'), {})).status).toBe(429);
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
