import { generateServiceKey, type ServiceKeyPair, SERVICE_TOKEN_METADATA } from '@halo/kit/auth';
import { grpcCallersOf, type ServiceName } from '@halo/kit/config';
import { grpc } from '@halo/kit/grpc';
import { signServiceToken, TEST_SERVICE_KEYS } from '@halo/kit/testing';
import { auth, catalog, content } from '@halo/proto';
import { startE2ESystem } from './helpers';

/**
 * Zero trust between the real processes, over real gRPC: for every method of every gRPC server,
 * a raw client with no token, an untrusted key, another audience or an expired token is refused
 * UNAUTHENTICATED; every Halo process not listed for the method is refused PERMISSION_DENIED; a
 * listed one gets through to the method. To tell "not listed" from "not trusted", every server
 * here trusts every process's key (what a platform might do with one shared JWKS): the access
 * tables alone decide.
 */
const PROCESSES = ['gateway', 'auth', 'content', 'catalog', 'payments', 'chat', 'registry'] as const;

/** The policy this test holds the services to (docs/service-identity.md, issue: zero trust). */
const SERVERS: { service: ServiceName; name: string; definition: grpc.ServiceDefinition; access: Record<string, string[]> }[] = [
  {
    service: 'auth',
    name: 'halo.auth.v1.ApiKeyService',
    definition: auth.ApiKeyServiceService,
    access: { ExchangeApiKey: ['gateway', 'registry'] },
  },
  {
    service: 'content',
    name: 'halo.content.v1.UserService',
    definition: content.UserServiceService,
    access: { GetUser: ['auth'], GetUsers: ['auth', 'chat'], GetUserByEmail: ['auth'], CreateUser: ['auth'], DeleteUser: ['auth'] },
  },
  // payments checks the products of its orders; no other process may read them.
  {
    service: 'catalog',
    name: 'halo.catalog.v1.ProductService',
    definition: catalog.ProductServiceService,
    access: { GetProduct: ['payments'], GetProducts: ['payments'] },
  },
];

const sign = (pair: ServiceKeyPair, iss: string, aud: string, expiresIn = 60) => signServiceToken(pair, { iss, aud, expiresIn });

type Outcome = { code: number; details: string; refusedByIdentity: boolean };

/** One raw unary call: the method's path, an empty request, exactly the token given. */
function call(address: string, path: string, def: grpc.MethodDefinition<unknown, unknown>, token: string | undefined): Promise<Outcome> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set(SERVICE_TOKEN_METADATA, token);
  return new Promise((resolve) => {
    // The message type's defaults: what an empty request decodes to.
    const request = def.requestDeserialize(Buffer.alloc(0));
    client.makeUnaryRequest(
      path,
      def.requestSerialize,
      def.responseDeserialize,
      request,
      metadata,
      { deadline: Date.now() + 5_000 },
      (err) => {
        client.close();
        resolve({
          code: err?.code ?? grpc.status.OK,
          details: err?.details ?? '',
          refusedByIdentity: (err?.metadata?.get('x-halo-refused').length ?? 0) > 0,
        });
      },
    );
  });
}

let sys: Awaited<ReturnType<typeof startE2ESystem>>;
const everyKey = JSON.stringify({ keys: PROCESSES.map((p) => TEST_SERVICE_KEYS[p].publicJwk) });
/** A well-formed key for `auth` that no server was given. */
const untrusted = generateServiceKey('auth', 'not-trusted');

beforeAll(async () => {
  const envFor = Object.fromEntries(
    PROCESSES.map((p) => [
      p,
      {
        SERVICE_SIGNING_KEY: JSON.stringify(TEST_SERVICE_KEYS[p].privateJwk),
        ...(p === 'gateway' ? {} : { SERVICE_TRUSTED_KEYS: everyKey }),
      },
    ]),
  );
  sys = await startE2ESystem({ envFor });
}, 90_000);

afterAll(async () => {
  await sys?.stop();
});

const methodsOf = (s: (typeof SERVERS)[number]) =>
  Object.values(s.definition).map((def) => ({ path: def.path, method: def.path.slice(def.path.lastIndexOf('/') + 1), def }));
const addressOf = (service: ServiceName) => sys.system.services[service].grpcAddr;

describe.each(SERVERS)('$name', (server) => {
  it('lists exactly the methods the policy names, and its callers are the topology’s', () => {
    expect(
      methodsOf(server)
        .map((m) => m.method)
        .sort(),
    ).toEqual(Object.keys(server.access).sort());
    // Only callers that are processes of the topology can hold a key anyone trusts.
    const listed = [...new Set(Object.values(server.access).flat())].filter((c) => (PROCESSES as readonly string[]).includes(c)).sort();
    expect(listed).toEqual([...grpcCallersOf(server.service)].sort());
  });

  it('refuses a call with no token, an untrusted key, another audience or an expired token: UNAUTHENTICATED, on every method', async () => {
    const aud = server.service;
    const bad: [string, string | undefined, string][] = [
      ['no token', undefined, 'Service token required'],
      ['untrusted key', await sign(untrusted, 'auth', aud), 'Invalid service token'],
      ['another audience', await sign(TEST_SERVICE_KEYS.gateway, 'gateway', aud === 'auth' ? 'content' : 'auth'), 'Invalid service token'],
      ['expired', await sign(TEST_SERVICE_KEYS.auth, 'auth', aud, -60), 'Invalid service token'],
    ];
    for (const { path, def } of methodsOf(server)) {
      for (const [what, token, details] of bad) {
        const out = await call(addressOf(server.service), path, def, token);
        expect({ path, what, ...out }).toEqual({ path, what, code: grpc.status.UNAUTHENTICATED, details, refusedByIdentity: true });
      }
    }
  });

  it('refuses every trusted Halo process not listed for a method (PERMISSION_DENIED) and lets the listed ones in', async () => {
    for (const { path, method, def } of methodsOf(server)) {
      for (const caller of PROCESSES) {
        const out = await call(addressOf(server.service), path, def, await sign(TEST_SERVICE_KEYS[caller], caller, server.service));
        if (server.access[method]!.includes(caller)) {
          // Through to the method: whatever it answers to an empty request, it is not a refusal.
          expect({ path, caller, refused: out.refusedByIdentity }).toEqual({ path, caller, refused: false });
        } else {
          expect({ path, caller, ...out }).toEqual({
            path,
            caller,
            code: grpc.status.PERMISSION_DENIED,
            details: `${caller} may not call ${method}`,
            refusedByIdentity: true,
          });
        }
      }
    }
  });
});

it('the refusals were logged by the servers with method and caller, never with a token', () => {
  const refused = sys.logs.filter((l) => l.includes('gRPC call refused'));
  expect(refused.length).toBeGreaterThan(0);
  expect(refused.some((l) => l.startsWith('content|') && l.includes('halo.content.v1.UserService/CreateUser'))).toBe(true);
  expect(sys.logs.join('\n')).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./);
});

it('the system works through the gateway with these keys: sign-up then login (auth → content), an API key (gateway → auth)', async () => {
  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    fetch(`${sys.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const email = `identity-${Date.now()}@example.com`;
  expect((await post('/auth/register', { name: 'Ida', email, password: 'correct-horse-battery' })).status).toBe(201);
  expect((await post('/auth/login', { email, password: 'correct-horse-battery' })).status).toBe(200);
  const admin = (await (await post('/auth/login', { email: 'admin@halo.local', password: 'admin-password' })).json()) as { token: string };
  const created = await post('/auth/api-keys', { name: 'identity', scopes: ['profile:read'] }, { authorization: `Bearer ${admin.token}` });
  expect(created.status).toBe(201);
  const { data } = (await created.json()) as { data: { key: string } };
  const viaKey = await fetch(`${sys.url}/profile`, { headers: { 'x-api-key': data.key } });
  expect(viaKey.status).toBe(200);
});
