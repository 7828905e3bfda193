import { openRedis, redisReady, type Redis } from '@halo/kit/db';
import { createLogger } from '@halo/kit/logging';
import { http, login, signUp, startTestSystem, type TestSystem } from './helpers';
import { expectRegistrationLimit, freshIp, from, LIMITS, loginLimitCases } from './login-limits';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let sys: TestSystem;
let redis: Redis;
/** auth names its keys after its schema, which is unique per test file. */
let prefix: string;

beforeAll(async () => {
  sys = await startTestSystem({ ...LIMITS, REDIS_URL });
  prefix = `halo:${sys.authDb.schema}:`;
  redis = openRedis(REDIS_URL, createLogger('test', 'silent'));
  expect(await redisReady(redis)).toBe(true);
});

afterAll(async () => {
  if (redis) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
  await sys?.close();
});

describe('login brute-force limits, Redis store', () => {
  loginLimitCases(() => sys);

  it('keeps its counters in Redis under the instance’s own prefix', async () => {
    const keys = await redis.keys(`${prefix}*`);
    expect(keys.some((k) => k.startsWith(`${prefix}login-email:`))).toBe(true);
    expect(keys.some((k) => k.startsWith(`${prefix}login-ip:`))).toBe(true);
    // Emails are not stored in clear.
    expect(keys.join(' ')).not.toContain('@');
  });

  it('the counters are shared by every instance using the same Redis', async () => {
    const second = await sys.startAuth();
    const me = await signUp(sys.base);
    const ip = freshIp();
    for (let i = 0; i < 3; i++) expect((await login(sys.base, me.email, 'wrong-password', from(ip))).status).toBe(401);
    expect((await login(second.base, me.email, me.password, from(ip))).status).toBe(429);
  });
});

describe('registration limit, Redis store', () => {
  it('counts an address’s registrations across every instance sharing the Redis: the 4th of 3 is 429', async () => {
    const [a, b] = await Promise.all([sys.startAuth({ REGISTER_MAX_PER_IP: '3' }), sys.startAuth({ REGISTER_MAX_PER_IP: '3' })]);
    await expectRegistrationLimit([a.base, b.base]);
    expect((await redis.keys(`${prefix}register-ip:*`)).length).toBeGreaterThan(0);
  });

  it('fails closed when Redis is unreachable: 503, nobody registered', async () => {
    const down = await sys.startAuth({ REDIS_URL: 'redis://127.0.0.1:1' });
    const res = await http(down.base, 'POST', '/auth/register', {
      body: { name: 'X', email: 'down@example.com', password: 'password123' },
    });
    expect([res.status, res.body]).toEqual([503, { error: 'Service unavailable' }]);
  });
});

describe('Redis configured but unreachable', () => {
  it('fails closed: login 503 Service unavailable (never unlimited guessing), /readyz 503', async () => {
    const down = await sys.startAuth({ REDIS_URL: 'redis://127.0.0.1:1' });
    const me = await signUp(sys.base);
    for (const password of ['wrong-password', me.password]) {
      const res = await login(down.base, me.email, password);
      expect([res.status, res.body]).toEqual([503, { error: 'Service unavailable' }]);
    }
    expect((await http(down.base, 'GET', '/readyz')).status).toBe(503);
  });
});
