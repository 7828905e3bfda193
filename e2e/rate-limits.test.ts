import { SCOPES } from '@halo/kit/auth';
import { startE2ESystem } from './helpers';

/**
 * The gateway's rate limits in the launched system (README "Limits"): a real gateway process, auth
 * exchanging a real API key. An API key has a budget of its own, apart from its owner's token.
 */

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
let admin: string;

beforeAll(async () => {
  sys = await startE2ESystem({ envFor: { gateway: { RATE_LIMIT_AUTHENTICATED: '4' } } });
  const login = await fetch(`${sys.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@halo.local', password: 'admin-password' }),
  });
  admin = ((await login.json()) as { token: string }).token;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

const profile = (headers: Record<string, string>) => fetch(`${sys.url}/profile`, { headers });

it('an API key spends its own budget, not its owner’s: its N+1th request → 429 while the owner still calls', async () => {
  // The admin's 1st authenticated request.
  const created = await fetch(`${sys.url}/auth/api-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    body: JSON.stringify({ name: 'rate-limited', scopes: [...SCOPES] }),
  });
  expect(created.status).toBe(201);
  const key = ((await created.json()) as { data: { key: string } }).data.key;

  for (let i = 1; i <= 4; i++) {
    const res = await profile({ 'x-api-key': key });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toBe('"authenticated";q=4;w=60');
    expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"authenticated";r=${4 - i};t=\\d+$`));
  }
  const refused = await profile({ 'x-api-key': key });
  expect(refused.status).toBe(429);
  expect(await refused.json()).toEqual({ error: 'Too many requests' });
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

  // The owner's token: its 2nd request of the window.
  const owner = await profile({ authorization: `Bearer ${admin}` });
  expect(owner.status).toBe(200);
  expect(owner.headers.get('ratelimit')).toMatch(/^"authenticated";r=2;t=\d+$/);
});
