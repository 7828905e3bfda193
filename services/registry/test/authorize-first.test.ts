import { startTestService, type TestService } from '@halo/kit/testing';
import { bearer, post, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { call, contractOf, serviceToken } from './helpers';

/**
 * Who before what (the REST manifest's `authorize` steps, src/rest/routes.ts): a caller who may
 * not do an operation is answered 403 however malformed its body also is, so it learns nothing
 * from a 400; a caller who may gets the 400 naming the field. Real Postgres, a real auth for the keys.
 */
let auth: TestSystem;
let reg: TestService<RegistryService>;
const keys = { catalog: '', none: '', ios: '', read: '' };
const key = (k: keyof typeof keys) => ({ 'x-api-key': keys[k] });

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const make = async (scopes: string[]) =>
    (await post(auth.base, '/auth/api-keys', { name: 'ci', scopes }, bearer(admin.token))).body.data.key as string;
  keys.catalog = await make(['schema:write:catalog']);
  keys.none = await make(['catalog:write']);
  keys.ios = await make(['operations:write:ios']);
  keys.read = await make(['schema:read']);
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

describe('POST /v1/check and /v1/publish', () => {
  const { service: _name, ...unnamed } = contractOf('catalog');
  const malformed = [
    { contract: { ...contractOf('payments'), url: 'x' } },
    { contract: { ...contractOf('payments'), sdl: 42 }, options: { since: 3 } },
    { contract: contractOf('payments'), acknowledge: '' },
  ];

  it.each(['/v1/check', '/v1/publish'])('%s: 403 for a service the caller may not write, whatever else is wrong', async (path) => {
    for (const body of malformed) {
      const res = await call(reg.base, 'POST', path, body, key('catalog'));
      expect([body, res.status, res.body]).toEqual([body, 403, { error: 'Forbidden' }]);
      const service = await call(reg.base, 'POST', path, body, await serviceToken('content'));
      expect([body, service.status, service.body]).toEqual([body, 403, { error: 'Forbidden' }]);
    }
  });

  it.each(['/v1/check', '/v1/publish'])('%s: 403 for a key that may write no service, even for a body naming none', async (path) => {
    for (const body of [{ contract: unnamed }, null, { options: 'x' }]) {
      for (const k of ['none', 'read', 'ios'] as const) {
        const res = await call(reg.base, 'POST', path, body, key(k));
        expect([k, body, res.status, res.body]).toEqual([k, body, 403, { error: 'Forbidden' }]);
      }
    }
  });

  it.each(['/v1/check', '/v1/publish'])('%s: the caller who may gets the 400 naming the field', async (path) => {
    const res = await call(reg.base, 'POST', path, { contract: { ...contractOf('catalog'), url: 'x' } }, key('catalog'));
    expect([res.status, res.body]).toEqual([400, { error: 'contract.url: url must be an http(s) URL' }]);
    const none = await call(reg.base, 'POST', path, { contract: unnamed }, key('catalog'));
    expect(none.status).toBe(400);
  });

  it('rollback and usage: 403 before the body is read', async () => {
    const rollback = await call(reg.base, 'POST', '/v1/rollback', { service: 'payments', to: 'latest' }, key('catalog'));
    expect([rollback.status, rollback.body]).toEqual([403, { error: 'Forbidden' }]);
    const usage = await call(reg.base, 'POST', '/v1/usage', { reports: 'x' }, await serviceToken('catalog'));
    expect([usage.status, usage.body]).toEqual([403, { error: 'Forbidden' }]);
  });
});

describe('POST /v1/operations and /v1/operations/retire', () => {
  const bad = [
    { client: 'web', version: '1.4.0', operations: 'none' },
    { client: 'web', version: '', operations: [], extra: 1 },
  ];

  it('403 for a caller who may not write the client named, whatever else is wrong', async () => {
    const service = await serviceToken('catalog');
    const cases: [Record<string, string>, unknown][] = [
      ...bad.map((b): [Record<string, string>, unknown] => [key('ios'), b]),
      ...bad.map((b): [Record<string, string>, unknown] => [service, b]),
      [key('read'), null],
      [key('none'), { client: 'web' }],
    ];
    for (const [headers, body] of cases) {
      const pushed = await call(reg.base, 'POST', '/v1/operations', body, headers);
      expect([body, pushed.status, pushed.body]).toEqual([body, 403, { error: 'Forbidden' }]);
      const retired = await call(reg.base, 'POST', '/v1/operations/retire', body, headers);
      expect([body, retired.status, retired.body]).toEqual([body, 403, { error: 'Forbidden' }]);
    }
  });

  it('the client it may write, with the same malformed body: 400 naming the field', async () => {
    const pushed = await call(reg.base, 'POST', '/v1/operations', { client: 'ios', version: '1.4.0', operations: 'none' }, key('ios'));
    expect([pushed.status, pushed.body]).toEqual([400, { error: 'operations is invalid' }]);
    const retired = await call(reg.base, 'POST', '/v1/operations/retire', { client: 'ios' }, key('ios'));
    expect([retired.status, retired.body]).toEqual([400, { error: 'version is invalid' }]);
  });
});
