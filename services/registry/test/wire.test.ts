import { createHash } from 'node:crypto';
import {
  ActiveOperationsAnswer,
  CheckAnswer,
  ClientsAnswer,
  ClientVersionAnswer,
  DiffAnswer,
  PublishAnswer,
  PushAnswer,
  PushRefusedAnswer,
  RefusedAnswer,
  RetireAnswer,
  ServicesAnswer,
  SupergraphAnswer,
  VersionAnswer,
  VersionsAnswer,
  type WireSchema,
} from '@halo/contracts/wire';
import { startTestService, type TestService } from '@halo/kit/testing';
import { bearer, post, signUpAdmin, startTestSystem, type TestSystem } from '../../auth/test/helpers';
import { registryService, type RegistryService } from '../src/service';
import { call, catalogWith, contractOf, serviceToken } from './helpers';

/**
 * The registry's real answers read by the shared wire schemas (@halo/contracts/wire), which the
 * gateway parses its polls with and the CLIs read with: each answer is accepted, and read back
 * whole (nothing it sends is left undeclared). Real Postgres, a real auth for the keys.
 */
let auth: TestSystem;
let reg: TestService<RegistryService>;
const keys = { schema: '', ops: '' };

beforeAll(async () => {
  auth = await startTestSystem();
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: auth.grpcAddr });
  const admin = await signUpAdmin(auth);
  const key = async (scopes: string[]) =>
    (await post(auth.base, '/auth/api-keys', { name: 'wire', scopes }, bearer(admin.token))).body.data.key as string;
  keys.schema = await key(['schema:write']);
  keys.ops = await key(['operations:write']);
}, 60_000);

afterAll(async () => {
  await reg?.close();
  await auth?.close();
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const NAMES = 'query ProductNames { products { data { id name } } }';

/** One request; its status, and its body as `schema` reads it, which must be the body as sent. */
async function read<T>(schema: WireSchema<T>, status: number, method: string, path: string, body?: unknown, key?: string) {
  const headers = key ? { 'x-api-key': key } : await serviceToken('gateway');
  const res = await call(reg.base, method, path, body, headers);
  expect([res.status, res.body]).toEqual([status, expect.anything()]);
  const parsed = schema.safeParse(res.body);
  if (!parsed.success) throw new Error(`${method} ${path}: ${JSON.stringify(parsed.error.issues)}`);
  expect(parsed.data).toEqual(res.body);
  return parsed.data;
}

it('what gateways poll: GET /v1/supergraph and GET /v1/operations/active', async () => {
  const sg = await read(SupergraphAnswer, 200, 'GET', '/v1/supergraph');
  expect(sg.composition).toBe(1);
  expect(Object.keys(sg.services)).toContain('catalog');
  expect(await read(ActiveOperationsAnswer, 200, 'GET', '/v1/operations/active')).toEqual({ operations: [] });
  await read(
    PushAnswer,
    201,
    'POST',
    '/v1/operations',
    { client: 'web', version: '1.0.0', operations: [{ id: sha256(NAMES), body: NAMES }] },
    keys.ops,
  );
  expect(await read(ActiveOperationsAnswer, 200, 'GET', '/v1/operations/active')).toEqual({
    operations: [{ id: sha256(NAMES), body: NAMES, client: 'web', version: '1.0.0' }],
  });
});

it('what `npm run subgraph` reads: checks, publishes, refusals, the history', async () => {
  const contract = catalogWith('wireNote: String');
  expect((await read(CheckAnswer, 200, 'POST', '/v1/check', { contract }, keys.schema)).ok).toBe(true);
  const published = await read(PublishAnswer, 201, 'POST', '/v1/publish', { contract }, keys.schema);
  expect(published).toMatchObject({ version: 2, composition: 2 });
  expect(await read(PublishAnswer, 200, 'POST', '/v1/publish', { contract }, keys.schema)).toMatchObject({ unchanged: true, version: 2 });
  // A schema that does not compose: 422, with the check's report.
  const broken = { ...contractOf('catalog'), sdl: 'type Query { nope: Nope }' };
  const refused = await read(RefusedAnswer, 422, 'POST', '/v1/publish', { contract: broken }, keys.schema);
  expect(refused.report?.ok).toBe(false);
  expect((await read(ServicesAnswer, 200, 'GET', '/v1/services')).services.length).toBeGreaterThan(0);
  expect((await read(VersionsAnswer, 200, 'GET', '/v1/services/catalog/versions')).versions.map((v) => v.version)).toEqual([2, 1]);
  expect((await read(VersionAnswer, 200, 'GET', '/v1/services/catalog/versions/2')).contract.sdl).toContain('wireNote');
  const diff = await read(DiffAnswer, 200, 'GET', '/v1/services/catalog/diff?from=1&to=2');
  expect(diff.changes.map((c) => c.path)).toContain('Product.wireNote');
});

it('what `npm run operations` reads: lists, one version, a refused push, a retirement', async () => {
  const body = (version: string, operations: unknown[]) => ({ client: 'ios', version, operations });
  await read(PushAnswer, 201, 'POST', '/v1/operations', body('2.0.0', [{ id: 'names', body: NAMES }]), keys.ops);
  expect(await read(PushAnswer, 200, 'POST', '/v1/operations', body('2.0.0', [{ id: 'names', body: NAMES }]), keys.ops)).toMatchObject({
    unchanged: true,
  });
  const refused = await read(
    PushRefusedAnswer,
    400,
    'POST',
    '/v1/operations',
    body('2.0.0', [{ id: 'bad', body: 'query { nope }' }]),
    keys.ops,
  );
  expect(refused.refused?.map((r) => r.id)).toEqual(['bad']);
  expect((await read(ClientsAnswer, 200, 'GET', '/v1/operations?client=ios')).clients.map((c) => c.version)).toEqual(['2.0.0']);
  expect((await read(ClientVersionAnswer, 200, 'GET', '/v1/operations/ios/2.0.0')).operations.map((o) => o.id)).toEqual(['names']);
  const retired = await read(RetireAnswer, 200, 'POST', '/v1/operations/retire', { client: 'ios', version: '2.0.0' }, keys.ops);
  expect(retired).toMatchObject({ client: 'ios', version: '2.0.0' });
});
