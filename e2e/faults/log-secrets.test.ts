import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { TEST_JWT_SECRET, TEST_SERVICE_KEYS, testIdentityEnv } from '@halo/kit/testing';
import { startE2ESystem } from '../helpers';

/**
 * Logs keep no secrets. The real system at LOG_LEVEL=debug goes through everything that handles
 * one — sign-up and login (passwords), refresh (the cookie), an API key shown once and used, a
 * payment, a subscription and a refused WebSocket, wrong passwords and bad tokens (the error
 * paths log most) — and then every line every
 * process wrote is searched for each secret it saw: none may appear, whole or as a JWT's parts.
 */
const PROCESSES = ['gateway', 'auth', 'content', 'catalog', 'payments', 'chat', 'registry'] as const;

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
beforeAll(async () => {
  // Every process gets the test keys and trusts exactly its callers' (the launcher's edges, the
  // registry's included: each service publishes its contract with a token signed by its key).
  const envFor = Object.fromEntries(PROCESSES.map((p) => [p, { LOG_LEVEL: 'debug', ...testIdentityEnv(p) }]));
  sys = await startE2ESystem({ envFor });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${sys.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

it('no password, token, cookie, API key, JWT secret or signing key in any log line of any process', async () => {
  const secrets: string[] = [TEST_JWT_SECRET, ...PROCESSES.map((p) => String(TEST_SERVICE_KEYS[p].privateJwk.d))];

  const password = 'correct-horse-battery-staple-7';
  const email = `logs-${Date.now()}@example.com`;
  secrets.push(password);
  expect((await post('/auth/register', { name: 'Lore', email, password })).status).toBe(201);
  const login = await post('/auth/login', { email, password });
  expect(login.status).toBe(200);
  const { accessToken } = (await login.json()) as { accessToken: string };
  const cookie = login.headers
    .getSetCookie()
    .find((c) => c.startsWith('refresh_token='))!
    .split(';')[0]!;
  secrets.push(accessToken, cookie.slice('refresh_token='.length));

  const refreshed = await post('/auth/refresh', {}, { cookie });
  expect(refreshed.status).toBe(200);
  const next = (await refreshed.json()) as { accessToken: string };
  secrets.push(
    next.accessToken,
    refreshed.headers
      .getSetCookie()
      .find((c) => c.startsWith('refresh_token='))!
      .split(';')[0]!
      .slice('refresh_token='.length),
  );

  // Wrong password and a forged token: the error paths.
  expect((await post('/auth/login', { email, password: 'wrong-password-9f8e7d' })).status).toBe(401);
  secrets.push('wrong-password-9f8e7d');
  const forged = `${accessToken.split('.').slice(0, 2).join('.')}.Zm9yZ2VkLXNpZ25hdHVyZS1sb25n`;
  expect((await fetch(`${sys.url}/profile`, { headers: { authorization: `Bearer ${forged}` } })).status).toBe(401);

  // An API key: created (shown once), used through the gateway's gRPC exchange, and a wrong one.
  const admin = (await (await post('/auth/login', { email: 'admin@halo.local', password: 'admin-password' })).json()) as {
    accessToken: string;
  };
  secrets.push('admin-password', admin.accessToken);
  const created = await post(
    '/auth/api-keys',
    { name: 'logs', scopes: ['profile:read', 'payments:write'] },
    { authorization: `Bearer ${admin.accessToken}` },
  );
  expect(created.status).toBe(201);
  const apiKey = ((await created.json()) as { data: { key: string } }).data.key;
  secrets.push(apiKey);
  expect((await fetch(`${sys.url}/profile`, { headers: { 'x-api-key': apiKey } })).status).toBe(200);
  expect((await fetch(`${sys.url}/profile`, { headers: { 'x-api-key': `${apiKey.slice(0, -4)}0000` } })).status).toBe(401);

  // A payment with the API key, and its replay.
  const pay = () => post('/api/payments', { amount: 12.5 }, { 'x-api-key': apiKey, 'idempotency-key': `logs-${Date.now()}` });
  expect((await pay()).status).toBe(201);

  // A subscription through the gateway (the token in connection_init, forwarded to chat) that
  // hears one message, and a socket refused for a forged token.
  const ws = (token: string) =>
    createClient({
      url: `${sys.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}` },
      retryAttempts: 0,
    });
  const subscriber = ws(next.accessToken);
  const heard = new Promise<unknown>((resolve, reject) => {
    subscriber.subscribe(
      { query: 'subscription { newMessage(chatId: "logs") { text } }' },
      { next: resolve, error: reject, complete: () => undefined },
    );
  });
  for (let i = 0; i < 50; i++) {
    await post(
      '/graphql',
      { query: 'mutation { sendMessage(chatId: "logs", text: "hi") { id } }' },
      { authorization: `Bearer ${next.accessToken}` },
    );
    const done = await Promise.race([heard.then(() => true), new Promise((r) => setTimeout(() => r(false), 100))]);
    if (done) break;
  }
  await expect(heard).resolves.toMatchObject({ data: { newMessage: { text: 'hi' } } });
  await subscriber.dispose();
  const refused = ws(forged);
  await expect(
    new Promise((resolve, reject) =>
      refused.subscribe({ query: '{ __typename }' }, { next: resolve, error: reject, complete: () => undefined }),
    ),
  ).rejects.toMatchObject({ code: 4401 });
  await refused.dispose();

  // Give the processes a moment to flush their last lines to the launcher.
  await new Promise((r) => setTimeout(r, 300));
  const logs = sys.logs.join('\n');
  expect(logs.length).toBeGreaterThan(1_000); // debug logs were really collected
  // Every process ran as configured: a contract refused for a wrong key makes its service unready
  // at a moment that races the launcher's ready check.
  expect(logs).not.toContain('contract not published');
  const leaked = secrets
    .flatMap((s) => (s.split('.').length === 3 ? [s, ...s.split('.').slice(1)] : [s])) // a JWT whole, its payload, its signature
    .filter((s) => s.length >= 8 && logs.includes(s))
    .map((s) => `${s.slice(0, 6)}… (${s.length} chars)`);
  expect(leaked).toEqual([]);
});
