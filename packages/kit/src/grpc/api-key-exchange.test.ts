import { auth as pb } from '@halo/proto';
import { bearer, post, signUpAdmin, startTestSystem, type TestSystem } from '../../../../services/auth/test/helpers';
import { createApiKeyExchange, type ApiKeyExchange } from './api-key-exchange';
import { CallPolicy, DEFAULT_CALL_POLICY } from './call-policy';
import { isHaloError } from '../errors/errors';
import { IdentityRefused } from './grpc';
import { callerFromHeader } from '../auth/jwt';
import { closedPort, testIdentity, TEST_JWT_SECRET } from '../testing';
import type { ServiceName } from '../config/topology';

/**
 * The one API-key exchange (the gateway's and the registry's), against the real auth service and
 * its Postgres: a key becomes auth's access token for its owner and scopes, and each failure
 * reaches the caller as the kit maps it, for the caller to word.
 */
let sys: TestSystem;
let key: string;
const opened: ApiKeyExchange[] = [];

beforeAll(async () => {
  sys = await startTestSystem();
  const admin = await signUpAdmin(sys);
  const created = await post(sys.base, '/auth/api-keys', { name: 'exchange', scopes: ['schema:read'] }, bearer(admin.token));
  key = (created.body as { data: { key: string } }).data.key;
}, 60_000);

afterAll(async () => {
  for (const e of opened) e.close();
  await sys?.close();
});

function exchangeAs(caller: ServiceName | 'gateway', address = sys.grpcAddr): ApiKeyExchange {
  const e = createApiKeyExchange({
    client: pb.ApiKeyServiceClient,
    address,
    deadlineMs: 2_000,
    identity: testIdentity(caller),
    policy: new CallPolicy('auth', DEFAULT_CALL_POLICY),
  });
  opened.push(e);
  return e;
}

const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => err,
  );

it("trades a key (blanks around it ignored) for auth's token of its owner and scopes, for the gateway and the registry alike", async () => {
  for (const caller of ['gateway', 'registry'] as const) {
    const token = await exchangeAs(caller).exchange(` ${key}\t`);
    const verified = callerFromHeader(`Bearer ${token}`, TEST_JWT_SECRET);
    expect([caller, verified?.name, verified?.role, verified?.scopes]).toEqual([caller, 'Root', 'admin', ['schema:read']]);
  }
});

it("answers an unknown key with auth's own 401, for the caller to word", async () => {
  const err = await failureOf(exchangeAs('gateway').exchange('hk_not-a-key'));
  expect(isHaloError(err) && [err.kind, err.httpStatus, err.message]).toEqual(['UNAUTHENTICATED', 401, 'Invalid API key']);
});

it('a process auth does not list for ExchangeApiKey is refused by its identity, never a client’s 401', async () => {
  const err = await failureOf(exchangeAs('content').exchange(key));
  expect(err).toBeInstanceOf(IdentityRefused);
  expect((err as IdentityRefused).peer).toBe('auth');
});

it('auth unreachable: 503 within the deadline, and close() after no call at all is harmless', async () => {
  const started = Date.now();
  const err = await failureOf(exchangeAs('gateway', `127.0.0.1:${await closedPort()}`).exchange(key));
  expect(isHaloError(err) && err.httpStatus).toBe(503);
  expect(Date.now() - started).toBeLessThan(2_500);
  expect(() => exchangeAs('registry').close()).not.toThrow();
});
