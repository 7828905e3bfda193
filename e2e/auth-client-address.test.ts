import { randomUUID } from 'node:crypto';
import { startE2ESystem } from './helpers';

/**
 * Whose word auth takes for the client address its per-address limits count: the gateway's
 * alone, proven by the service token its proxy attaches (audience auth), never by the network
 * position of the peer. Straight to auth's port — what any pod in a cluster can do — a rotating
 * X-Forwarded-For changes nothing; through the gateway the client address it judged counts,
 * one counter per address however it is written. The gateway here trusts loopback as its
 * ingress (GATEWAY_TRUSTED_PROXIES), so this test can speak for several clients through it.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;

beforeAll(async () => {
  sys = await startE2ESystem({
    envFor: { gateway: { GATEWAY_TRUSTED_PROXIES: 'loopback' }, auth: { REGISTER_MAX_PER_IP: '3' } },
  });
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

let n = 0;
const email = (tag: string) => `${tag}-${randomUUID()}@e2e.test`;
const rotated = () => ({ 'x-forwarded-for': `198.51.100.${++n % 250}, 10.0.${n % 250}.7` });
const register = (base: string, headers: Record<string, string>) =>
  post(base, '/auth/register', { name: 'Addr', email: email('reg'), password: 'password123' }, headers);

describe('straight to auth’s port, X-Forwarded-For is not believed', () => {
  it('20 failed logins with a rotating X-Forwarded-For, then the 21st (even the right password) is 429', async () => {
    const auth = sys.direct('auth');
    for (let i = 0; i < 20; i++) {
      expect((await post(auth, '/auth/login', { email: email('spray'), password: 'wrong-password' }, rotated())).status).toBe(401);
    }
    for (let i = 0; i < 4; i++) {
      const blocked = await post(auth, '/auth/login', { email: 'alice@halo.local', password: 'password123' }, rotated());
      expect([blocked.status, await blocked.json()]).toEqual([429, { error: 'Too many attempts' }]);
    }
  });

  it('3 registrations with a rotating X-Forwarded-For, then 429', async () => {
    const auth = sys.direct('auth');
    for (let i = 0; i < 3; i++) expect((await register(auth, rotated())).status).toBe(201);
    const refused = await register(auth, rotated());
    expect([refused.status, await refused.json()]).toEqual([429, { error: 'Too many attempts' }]);
  });
});

describe('through the gateway, the client address it judged counts', () => {
  it('each client its own registration counter; one client spelled four ways is one', async () => {
    const spelled = ['203.0.113.41', '::ffff:203.0.113.41', '0:0:0:0:0:ffff:203.0.113.41', '::ffff:cb00:7129'];
    for (const address of spelled.slice(0, 3)) expect((await register(sys.url, { 'x-forwarded-for': address })).status).toBe(201);
    const refused = await register(sys.url, { 'x-forwarded-for': spelled[3]! });
    expect([refused.status, await refused.json()]).toEqual([429, { error: 'Too many attempts' }]);
    // Another client, through the same gateway (from the same socket address): not affected.
    expect((await register(sys.url, { 'x-forwarded-for': '203.0.113.42' })).status).toBe(201);
  });

  it('a client’s failed logins count for that client only', async () => {
    const client = { 'x-forwarded-for': '203.0.113.51' };
    for (let i = 0; i < 20; i++) {
      expect((await post(sys.url, '/auth/login', { email: email('gw'), password: 'wrong-password' }, client)).status).toBe(401);
    }
    const blocked = await post(sys.url, '/auth/login', { email: 'bob@halo.local', password: 'password123' }, client);
    expect(blocked.status).toBe(429);
    const other = await post(
      sys.url,
      '/auth/login',
      { email: 'bob@halo.local', password: 'password123' },
      { 'x-forwarded-for': '203.0.113.52' },
    );
    expect(other.status).toBe(200);
  });
});
