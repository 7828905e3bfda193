import { generateServiceKey, ServiceIdentity } from '@halo/kit/auth';
import { startTestService, testIdentityEnv, type TestService } from '@halo/kit/testing';
import { startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { call, catalogWith, serviceToken } from './helpers';

/**
 * Credentials for writes (docs/registry.md, "Authentication"): a publish token is spent once, and
 * in development a caller without credentials reads and checks but never writes, while npm
 * start's developer key does what `npm run subgraph` needs. Against real Postgres and a real auth.
 */
let auth: TestSystem;
let reg: TestService<RegistryService>;

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

const as = {
  catalog: () => serviceToken('catalog'),
  gateway: () => serviceToken('gateway'),
};

describe('a publish token is single-use', () => {
  it('the same service token a second time is 401 Invalid token, and nothing is published', async () => {
    const token = await as.catalog();
    const first = await call(reg.base, 'POST', '/v1/publish', { contract: catalogWith('spentOnce: String') }, token);
    expect(first.status).toBe(201);
    const versions = (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await as.gateway())).body.versions.length;
    const again = await call(reg.base, 'POST', '/v1/publish', { contract: catalogWith('spentOnce: String\n  spentTwice: String') }, token);
    expect([again.status, again.body]).toEqual([401, { error: 'Invalid token' }]);
    const rollback = await call(reg.base, 'POST', '/v1/rollback', { service: 'catalog', to: 1 }, token);
    expect([rollback.status, rollback.body]).toEqual([401, { error: 'Invalid token' }]);
    expect((await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await as.gateway())).body.versions.length).toBe(
      versions,
    );
    // Reads and usage reports are not writes of a contract: a token serves them for its lifetime.
    const gateway = await as.gateway();
    for (let i = 0; i < 2; i++) expect((await call(reg.base, 'GET', '/v1/services', undefined, gateway)).status).toBe(200);
  });
});

describe('development: reads and checks from loopback without credentials; writes need npm start’s developer key', () => {
  let dev: TestService<RegistryService>;
  let prod: TestService<RegistryService>;
  const developer = generateServiceKey('developer', 'test');
  const trusted = JSON.stringify({
    keys: [...JSON.parse(testIdentityEnv('registry').SERVICE_TRUSTED_KEYS!).keys, developer.publicJwk],
  });
  const asDeveloper = async () => ({
    'x-halo-service-token': await new ServiceIdentity('developer', { signingKey: developer.privateJwk }).singleUseToken('registry'),
  });
  beforeAll(async () => {
    dev = await startTestService(registryService, {
      AUTH_GRPC_ADDR: auth.grpcAddr,
      HALO_ENV: 'development',
      SERVICE_TRUSTED_KEYS: trusted,
    });
    prod = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr, SERVICE_TRUSTED_KEYS: trusted });
  });
  afterAll(async () => {
    await dev?.close();
    await prod?.close();
  });

  it('anyone on loopback may read and check, as before', async () => {
    expect((await call(dev.base, 'GET', '/v1/services')).status).toBe(200);
    expect((await call(dev.base, 'POST', '/v1/check', { contract: catalogWith('devField: String') })).body.ok).toBe(true);
    // Credentials, when sent, are still checked.
    expect((await call(dev.base, 'GET', '/v1/services', undefined, { 'x-halo-service-token': 'nope' })).status).toBe(401);
  });

  it('publish, rollback and usage without credentials: 401 Token required, and nothing changes', async () => {
    const before = (await call(dev.base, 'GET', '/v1/services')).body;
    const usage = { gateway: { id: 'fake', composition: 1 }, reports: [] };
    for (const [path, body] of [
      ['/v1/publish', { contract: catalogWith('anonymous: String') }],
      ['/v1/rollback', { service: 'catalog', to: 1 }],
      ['/v1/usage', usage],
    ] as const) {
      const res = await call(dev.base, 'POST', path, body);
      expect([path, res.status, res.body]).toEqual([path, 401, { error: 'Token required' }]);
    }
    expect((await call(dev.base, 'GET', '/v1/services')).body).toEqual(before);
    expect((await call(dev.base, 'GET', '/v1/gateways')).body.gateways.map((g: { id: string }) => g.id)).not.toContain('fake');
  });

  it('the developer key publishes any service, authored as such; it reports no usage; its token is single-use', async () => {
    const token = await asDeveloper();
    const res = await call(dev.base, 'POST', '/v1/publish', { contract: catalogWith('byDeveloper: String') }, token);
    expect(res.status).toBe(201);
    const [latest] = (await call(dev.base, 'GET', '/v1/services/catalog/versions')).body.versions;
    expect(latest.author).toBe('developer (npm start)');
    expect(
      (await call(dev.base, 'POST', '/v1/publish', { contract: catalogWith('byDeveloper: String\n  again: String') }, token)).status,
    ).toBe(401);
    const usage = { gateway: { id: 'fake', composition: 1 }, reports: [] };
    expect((await call(dev.base, 'POST', '/v1/usage', usage, await asDeveloper())).status).toBe(403);
  });

  it('outside development the developer key is refused even where it is trusted, and loopback gets no pass', async () => {
    const res = await call(prod.base, 'POST', '/v1/check', { contract: catalogWith('x: String') }, await asDeveloper());
    expect([res.status, res.body]).toEqual([401, { error: 'Invalid token' }]);
    expect((await call(prod.base, 'GET', '/v1/services')).status).toBe(401);
  });
});
