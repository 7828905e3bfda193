import { startTestSystem, type TestSystem } from './helpers';
import { expectRegistrationLimit, LIMITS, loginLimitCases } from './login-limits';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem(LIMITS);
});

afterAll(async () => {
  await sys?.close();
});

describe('login brute-force limits, in-memory store (no REDIS_URL)', () => {
  loginLimitCases(() => sys);
});

describe('registration limit, in-memory store', () => {
  it('3 registrations per address (REGISTER_MAX_PER_IP=3), then 429 Too many attempts with Retry-After', async () => {
    const limited = await sys.startAuth({ REGISTER_MAX_PER_IP: '3' });
    await expectRegistrationLimit([limited.base]);
  });
});
