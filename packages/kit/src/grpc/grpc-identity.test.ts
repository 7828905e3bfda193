import { content } from '@halo/proto';
import { ConfigError } from '../config/config';
import { HaloError } from '../errors/errors';
import {
  callUnary,
  checkHealth,
  grpc,
  HealthClient,
  startGrpcServer,
  unary,
  type GrpcServiceBinding,
  type RunningGrpcServer,
} from './grpc';
import {
  generateServiceKey,
  SERVICE_TOKEN_METADATA,
  ServiceIdentity,
  serviceIdentityFor,
  type ServiceKeyPair,
} from '../auth/service-identity';
import { createMetrics } from '../metrics/metrics';
import { capturingLogger, signServiceToken } from '../testing';

/**
 * Service identity at the gRPC level, real server and real client: every refusal case of
 * docs/service-identity.md, the open health service, what is logged, and key rotation with no
 * failed call.
 */
const USER_SERVICE = 'halo.content.v1.UserService';
const user = (id: number): content.User => ({
  id,
  name: `U${id}`,
  email: `u${id}@example.com`,
  avatar: '',
  role: 'user',
  createdAt: '2024-01-01T00:00:00.000Z',
});

const keys = {
  auth: generateServiceKey('auth', 'k1'),
  authNext: generateServiceKey('auth', 'k2'),
  gateway: generateServiceKey('gateway', 'k1'),
  stranger: generateServiceKey('auth', 'stolen'),
};
const trust = (...pairs: ServiceKeyPair[]) => ({ keys: pairs.map((p) => p.publicJwk) });
const signer = (name: string, pair: ServiceKeyPair) => new ServiceIdentity(name, { signingKey: pair.privateJwk });

function binding(logger: ReturnType<typeof capturingLogger>['logger'], handled: string[]): GrpcServiceBinding {
  const handle = (name: string) =>
    unary(logger, async (req: { id?: number }) => {
      handled.push(name);
      return name === 'getUsers' ? { users: [] } : name === 'deleteUser' ? {} : { user: user(req.id ?? 1) };
    });
  return {
    name: USER_SERVICE,
    definition: content.UserServiceService,
    implementation: {
      getUser: handle('getUser'),
      getUsers: handle('getUsers'),
      getUserByEmail: handle('getUserByEmail'),
      createUser: handle('createUser'),
      deleteUser: handle('deleteUser'),
    },
    // The gateway may read one user; only auth may do the rest. GetUsers is closed.
    access: { GetUser: ['auth', 'gateway'], GetUsers: [], GetUserByEmail: ['auth'], CreateUser: ['auth'], DeleteUser: ['auth'] },
  };
}

async function serve(trusted: ReturnType<typeof trust>) {
  const { logger, lines } = capturingLogger('warn');
  const handled: string[] = [];
  const metrics = createMetrics('content');
  const server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    services: [binding(logger, handled)],
    identity: new ServiceIdentity('content', { trusted }),
    metrics,
    logger,
  });
  const client = new content.UserServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  return { server, client, lines, handled, metrics };
}

/** A raw call with exactly the metadata given: no kit client in the way. */
function rawCall(client: content.UserServiceClient, method: keyof content.UserServiceClient, token: string | undefined) {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set(SERVICE_TOKEN_METADATA, token);
  const fn = client[method] as unknown as (r: object, m: grpc.Metadata, o: object, cb: (err: grpc.ServiceError | null) => void) => void;
  return new Promise<{ code: number; details: string }>((resolve) =>
    fn.call(client, { id: 1, ids: [1], email: 'a@b.c', name: 'A' }, metadata, { deadline: Date.now() + 5_000 }, (err) =>
      resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: '' }),
    ),
  );
}

const token = (pair: ServiceKeyPair, c: { iss: string; aud: string; expiresIn?: number }) => signServiceToken(pair, c);

const METHODS = ['getUser', 'getUsers', 'getUserByEmail', 'createUser', 'deleteUser'] as const;

describe('a gRPC server behind service identity', () => {
  let s: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    s = await serve(trust(keys.auth, keys.gateway));
  });
  afterAll(async () => {
    s.client.close();
    await s.server.shutdown(1_000);
  });

  const UNAUTH = grpc.status.UNAUTHENTICATED;
  const cases: [string, () => Promise<string | undefined>, { code: number; details: string }][] = [
    ['no token', async () => undefined, { code: UNAUTH, details: 'Service token required' }],
    ['an empty token', async () => '', { code: UNAUTH, details: 'Service token required' }],
    ['not a JWT', async () => 'garbage', { code: UNAUTH, details: 'Invalid service token' }],
    [
      'a key the server does not trust',
      () => token(keys.stranger, { iss: 'auth', aud: 'content' }),
      { code: UNAUTH, details: 'Invalid service token' },
    ],
    ['another audience', () => token(keys.auth, { iss: 'auth', aud: 'catalog' }), { code: UNAUTH, details: 'Invalid service token' }],
    [
      'an expired token',
      () => token(keys.auth, { iss: 'auth', aud: 'content', expiresIn: -30 }),
      { code: UNAUTH, details: 'Invalid service token' },
    ],
    [
      'a trusted key speaking for another service (kid auth:…, iss gateway)',
      () => token(keys.auth, { iss: 'gateway', aud: 'content' }),
      { code: UNAUTH, details: 'Invalid service token' },
    ],
  ];

  it.each(cases)('refuses %s on every method, before the handler runs', async (_what, make, expected) => {
    const t = await make();
    for (const method of METHODS) expect(await rawCall(s.client, method, t)).toEqual(expected);
    expect(s.handled).toEqual([]);
  });

  it('refuses a valid caller that is not listed for the method: PERMISSION_DENIED', async () => {
    const t = await token(keys.gateway, { iss: 'gateway', aud: 'content' });
    for (const method of ['getUsers', 'getUserByEmail', 'createUser', 'deleteUser'] as const) {
      const m = method.charAt(0).toUpperCase() + method.slice(1);
      expect(await rawCall(s.client, method, t)).toEqual({ code: grpc.status.PERMISSION_DENIED, details: `gateway may not call ${m}` });
    }
    // A closed method refuses even auth.
    expect(await rawCall(s.client, 'getUsers', await token(keys.auth, { iss: 'auth', aud: 'content' }))).toEqual({
      code: grpc.status.PERMISSION_DENIED,
      details: 'auth may not call GetUsers',
    });
    expect(s.handled).toEqual([]);
    // The listed method answers the same caller.
    expect(await rawCall(s.client, 'getUser', t)).toEqual({ code: grpc.status.OK, details: '' });
    expect(s.handled).toEqual(['getUser']);
  });

  it('logs each refusal with the method and the caller it claims, never the token', async () => {
    const t = await token(keys.stranger, { iss: 'auth', aud: 'content' });
    await rawCall(s.client, 'createUser', t);
    const line = s.lines.findLast((l) => l.msg === 'gRPC call refused');
    expect(line).toMatchObject({ grpcMethod: `${USER_SERVICE}/CreateUser`, claimedCaller: 'auth', reason: 'Invalid service token' });
    expect(JSON.stringify(s.lines)).not.toContain(t);
    expect(JSON.stringify(s.lines)).not.toContain(t.split('.')[2]);
  });

  it('counts every call served in the metrics, refusals by their status', async () => {
    const text = await s.metrics.registry.metrics();
    const count = (method: string, code: string) =>
      Number(
        new RegExp(
          `^halo_grpc_server_handling_seconds_count\\{service="content",method="${USER_SERVICE}/${method}",code="${code}"\\} (\\d+)$`,
          'm',
        ).exec(text)?.[1] ?? 0,
      );
    expect(count('CreateUser', 'UNAUTHENTICATED')).toBeGreaterThanOrEqual(7);
    expect(count('CreateUser', 'PERMISSION_DENIED')).toBeGreaterThanOrEqual(1);
    expect(count('GetUser', 'OK')).toBeGreaterThanOrEqual(1);
  });

  it('keeps grpc.health.v1 open to anyone, token or not', async () => {
    const health = new HealthClient(`127.0.0.1:${s.server.port}`, grpc.credentials.createInsecure());
    try {
      expect(await checkHealth(health, USER_SERVICE, { defaultDeadlineMs: 5_000 })).toBe('SERVING');
    } finally {
      health.close();
    }
  });

  it('the kit client sends its token: callUnary with auth is answered', async () => {
    const res = await callUnary(
      s.client,
      s.client.getUser,
      { id: 4 },
      { defaultDeadlineMs: 5_000, auth: { identity: signer('auth', keys.auth), audience: 'content' } },
    );
    expect(res.user?.id).toBe(4);
  });

  it('on the caller, a refusal is its own misconfiguration (INTERNAL), not the end user’s 401/403', async () => {
    const err = await callUnary(
      s.client,
      s.client.getUsers,
      { ids: [1] },
      { defaultDeadlineMs: 5_000, auth: { identity: signer('auth', keys.auth), audience: 'content' } },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect((err as HaloError).kind).toBe('INTERNAL');
    expect((err as HaloError).message).toMatch(/refused by content's service identity: auth may not call GetUsers/);
  });
});

describe('starting a server', () => {
  const { logger } = capturingLogger('silent');
  const identity = new ServiceIdentity('content', { trusted: trust(keys.auth) });

  it('refuses an access table that does not list exactly the service’s methods', async () => {
    const b = binding(logger, []);
    const { DeleteUser: _omit, ...missing } = b.access;
    await expect(startGrpcServer({ port: 0, host: '127.0.0.1', services: [{ ...b, access: missing }], identity, logger })).rejects.toThrow(
      new ConfigError(`${USER_SERVICE}: its access table must list exactly its methods; missing: DeleteUser`),
    );
    await expect(
      startGrpcServer({
        port: 0,
        host: '127.0.0.1',
        services: [{ ...b, access: { ...b.access, RemoveUser: ['auth'] } }],
        identity,
        logger,
      }),
    ).rejects.toThrow(/not methods: RemoveUser/);
  });

  it('a process without the keys its place in the topology needs does not start, naming the variable', () => {
    expect(() => serviceIdentityFor('content', {})).toThrow(
      /^Invalid configuration: SERVICE_TRUSTED_KEYS: is required: auth, chat call content over gRPC/,
    );
    expect(() => serviceIdentityFor('auth', { SERVICE_TRUSTED_KEYS: JSON.stringify(trust(keys.gateway)) })).toThrow(
      /^Invalid configuration: SERVICE_SIGNING_KEY: is required: auth calls content over gRPC/,
    );
    expect(() => serviceIdentityFor('gateway', {})).toThrow(/SERVICE_SIGNING_KEY: is required: gateway calls auth/);
    // payments calls catalog and nobody calls payments: a signing key is all it needs, and catalog needs payments' public key.
    expect(() => serviceIdentityFor('catalog', {})).toThrow(
      /^Invalid configuration: SERVICE_TRUSTED_KEYS: is required: payments calls catalog over gRPC/,
    );
    expect(() => serviceIdentityFor('payments', {})).toThrow(
      /^Invalid configuration: SERVICE_SIGNING_KEY: is required: payments calls catalog over gRPC/,
    );
    const payments = generateServiceKey('payments', 'k1');
    expect(serviceIdentityFor('payments', { SERVICE_SIGNING_KEY: JSON.stringify(payments.privateJwk) }).canCall).toBe(true);
  });
});

describe('rotating a caller’s key', () => {
  it('trust both, sign with the new one, drop the old one: no call fails, and the old key is refused at the end', async () => {
    let server: RunningGrpcServer | undefined;
    let client: content.UserServiceClient | undefined;
    const failures: unknown[] = [];
    const callAs = async (pair: ServiceKeyPair) => {
      // A fresh identity per phase: as after rolling the caller with a new SERVICE_SIGNING_KEY.
      const identity = signer('auth', pair);
      for (let i = 0; i < 5; i++) {
        await callUnary(client!, client!.getUser, { id: i }, { defaultDeadlineMs: 5_000, auth: { identity, audience: 'content' } }).catch(
          (e: unknown) => failures.push(e),
        );
      }
    };
    /** "Rolling" the callee: a new server process with other trusted keys, the client reconnects. */
    const roll = async (trusted: ReturnType<typeof trust>) => {
      client?.close();
      await server?.shutdown(1_000);
      const next = await serve(trusted);
      server = next.server;
      client = next.client;
    };
    try {
      await roll(trust(keys.auth)); // before: the old key only
      await callAs(keys.auth);
      await roll(trust(keys.auth, keys.authNext)); // step 2: trust both
      await callAs(keys.auth);
      await callAs(keys.authNext); // step 3: the caller signs with the new key
      await roll(trust(keys.authNext)); // step 4: drop the old key
      await callAs(keys.authNext);
      expect(failures).toEqual([]);
      expect(await rawCall(client!, 'getUser', await token(keys.auth, { iss: 'auth', aud: 'content' }))).toEqual({
        code: grpc.status.UNAUTHENTICATED,
        details: 'Invalid service token',
      });
    } finally {
      client?.close();
      await server?.shutdown(1_000);
    }
  });
});
