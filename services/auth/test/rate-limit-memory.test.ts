import { startTestSystem, type TestSystem } from './helpers';
import { LIMITS, loginLimitCases } from './login-limits';

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
