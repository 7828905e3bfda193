import { content } from '@halo/proto';
import pino from 'pino';
import { HaloError, notFound } from '../errors/errors';
import { callUnary, checkHealth, clientChannelOptions, grpc, HealthClient, startGrpcServer, unary, type RunningGrpcServer } from './grpc';
import { capturingLogger, testIdentity } from '../testing';

/** Every call here is auth's, as in the topology (service identity itself: grpc-identity.test.ts). */
const AS_AUTH = { identity: testIdentity('auth'), audience: 'content' };

const USER_SERVICE = 'halo.content.v1.UserService';

function healthCheck(client: HealthClient, service: string): Promise<{ status: string }> {
  return checkHealth(client, service, { defaultDeadlineMs: 5_000 }).then((status) => ({ status }));
}

/** A handler that never answers until the test says so. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

function user(id: number): content.User {
  return { id, name: `User ${id}`, email: `u${id}@example.com`, avatar: '', role: 'user', createdAt: '2024-01-01T00:00:00.000Z' };
}

function startUserService(logger: pino.Logger, handlers: Partial<content.UserServiceServer>) {
  const implementation: content.UserServiceServer = {
    getUser: unary(logger, async (req: content.GetUserRequest) => ({ user: user(req.id) })),
    getUsers: unary(logger, async (req: content.GetUsersRequest) => ({ users: req.ids.map(user) })),
    getUserByEmail: unary(logger, async () => {
      throw notFound('No user with that email');
    }),
    createUser: unary(logger, async () => {
      throw notFound('not used here');
    }),
    deleteUser: unary(logger, async () => ({})),
    ...handlers,
  };
  return startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    services: [
      {
        name: USER_SERVICE,
        definition: content.UserServiceService,
        implementation,
        access: { GetUser: ['auth'], GetUsers: ['auth'], GetUserByEmail: ['auth'], CreateUser: ['auth'], DeleteUser: ['auth'] },
      },
    ],
    identity: testIdentity('content'),
    logger,
  });
}

describe('gRPC server and client helpers', () => {
  const { logger, lines } = capturingLogger();
  const seenRequestIds: string[] = [];
  const slow = gate();
  let server: RunningGrpcServer;
  let client: content.UserServiceClient;
  let health: HealthClient;

  beforeAll(async () => {
    server = await startUserService(logger, {
      getUser: unary(logger, async (req: content.GetUserRequest, ctx) => {
        seenRequestIds.push(ctx.requestId);
        ctx.logger.info({ id: req.id }, 'getUser');
        if (req.id === 404) throw notFound(`No user ${req.id}`);
        if (req.id === 500) throw new Error('connection to db failed: password=hunter2');
        if (req.id === 999) await slow.opened;
        return { user: user(req.id) };
      }),
    });
    const address = `127.0.0.1:${server.port}`;
    client = new content.UserServiceClient(address, grpc.credentials.createInsecure(), clientChannelOptions);
    health = new HealthClient(address, grpc.credentials.createInsecure());
  });

  afterAll(async () => {
    slow.open();
    client.close();
    health.close();
    await server.shutdown(1_000);
  });

  it('listens on the port it was given, or a free one for port 0', () => {
    expect(server.port).toBeGreaterThan(0);
  });

  it('answers a unary call through callUnary', async () => {
    const res = await callUnary(client, client.getUser, { id: 7 }, { defaultDeadlineMs: 5_000, auth: AS_AUTH });
    expect(res.user).toEqual(user(7));
    const many = await callUnary(client, client.getUsers, { ids: [1, 2] }, { defaultDeadlineMs: 5_000, auth: AS_AUTH });
    expect(many.users.map((u) => u.id)).toEqual([1, 2]);
  });

  it('sends the request id as metadata, and the handler sees it and logs with it', async () => {
    await callUnary(client, client.getUser, { id: 8 }, { requestId: 'req-abc-123', defaultDeadlineMs: 5_000, auth: AS_AUTH });
    expect(seenRequestIds.at(-1)).toBe('req-abc-123');
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'getUser', id: 8, requestId: 'req-abc-123' }));
  });

  it('gives the handler a fresh request id when the caller sent none', async () => {
    await callUnary(client, client.getUser, { id: 9 }, { defaultDeadlineMs: 5_000, auth: AS_AUTH });
    expect(seenRequestIds.at(-1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('replaces a request id that does not look like one (log injection, oversize)', async () => {
    await callUnary(client, client.getUser, { id: 10 }, { requestId: 'a b"c', defaultDeadlineMs: 5_000, auth: AS_AUTH });
    expect(seenRequestIds.at(-1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    await callUnary(client, client.getUser, { id: 11 }, { requestId: 'x'.repeat(500), defaultDeadlineMs: 5_000, auth: AS_AUTH });
    expect(seenRequestIds.at(-1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
  });

  it('turns a thrown HaloError into the same HaloError on the client', async () => {
    const err = await callUnary(client, client.getUser, { id: 404 }, { defaultDeadlineMs: 5_000, auth: AS_AUTH }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect((err as HaloError).kind).toBe('NOT_FOUND');
    expect((err as HaloError).message).toBe('No user 404');
    const byEmail = await callUnary(client, client.getUserByEmail, { email: 'x@y.z' }, { defaultDeadlineMs: 5_000, auth: AS_AUTH }).catch(
      (e: unknown) => e,
    );
    expect((byEmail as HaloError).kind).toBe('NOT_FOUND');
  });

  it('refuses a NUL character in any string of the request as INVALID_ARGUMENT naming the field, before the handler', async () => {
    // getUserByEmail's handler would answer NOT_FOUND: the rule answers first.
    const err = await callUnary(
      client,
      client.getUserByEmail,
      { email: 'a\u0000@x.io' },
      { defaultDeadlineMs: 5_000, auth: AS_AUTH },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect([(err as HaloError).kind, (err as HaloError).message]).toEqual(['BAD_REQUEST', 'email must not contain NUL characters']);
  });

  it('turns an unexpected error into INTERNAL without its message, and logs it on the server', async () => {
    const err = await callUnary(
      client,
      client.getUser,
      { id: 500 },
      { requestId: 'req-500', defaultDeadlineMs: 5_000, auth: AS_AUTH },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect((err as HaloError).kind).toBe('INTERNAL');
    expect((err as HaloError).message).toBe('Internal server error');
    expect(JSON.stringify(err)).not.toContain('hunter2');
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, msg: 'gRPC handler failed', requestId: 'req-500' }));
  });

  it('fails a call slower than its deadline as UNAVAILABLE', async () => {
    const err = await callUnary(client, client.getUser, { id: 999 }, { deadlineMs: 100, defaultDeadlineMs: 60_000, auth: AS_AUTH }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HaloError);
    expect((err as HaloError).kind).toBe('UNAVAILABLE');
    expect((err as HaloError).message).toBe('Upstream service unavailable');
  });

  it('uses the default deadline when the call gives none', async () => {
    const err = await callUnary(client, client.getUser, { id: 999 }, { defaultDeadlineMs: 100, auth: AS_AUTH }).catch((e: unknown) => e);
    expect((err as HaloError).kind).toBe('UNAVAILABLE');
  });

  it('serves the standard health service: SERVING overall and for each service', async () => {
    await expect(healthCheck(health, '')).resolves.toEqual({ status: 'SERVING' });
    await expect(healthCheck(health, USER_SERVICE)).resolves.toEqual({ status: 'SERVING' });
  });

  it('answers NOT_FOUND for a service it does not serve', async () => {
    await expect(healthCheck(health, 'halo.nope.v1.Nope')).rejects.toMatchObject({ kind: 'NOT_FOUND' });
  });
});

describe('gRPC server shutdown', () => {
  it('reports NOT_SERVING as soon as shutdown starts, then stops answering', async () => {
    const { logger } = capturingLogger();
    const server = await startUserService(logger, {});
    const address = `127.0.0.1:${server.port}`;
    const client = new content.UserServiceClient(address, grpc.credentials.createInsecure());
    const health = new HealthClient(address, grpc.credentials.createInsecure());
    let stopped = false;
    try {
      await expect(healthCheck(health, USER_SERVICE)).resolves.toEqual({ status: 'SERVING' });

      // A Watch stream opened before shutdown sees the status change.
      const statuses: string[] = [];
      const watch = health.Watch({ service: USER_SERVICE });
      watch.on('error', () => undefined); // cancelled when the server goes away
      const firstStatus = new Promise<void>((resolve) => watch.once('data', () => resolve()));
      watch.on('data', (res: { status: string }) => statuses.push(res.status));
      await firstStatus;

      // The open Watch keeps the server busy, so shutdown has to force it after its grace period.
      await server.shutdown(300);
      stopped = true;
      expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);

      await expect(healthCheck(health, '')).rejects.toMatchObject({ kind: 'UNAVAILABLE' });
      const err = await callUnary(client, client.getUser, { id: 1 }, { defaultDeadlineMs: 2_000, auth: AS_AUTH }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HaloError);
      expect((err as HaloError).kind).toBe('UNAVAILABLE');
    } finally {
      client.close();
      health.close();
      if (!stopped) await server.shutdown(100);
    }
  });

  it('finishes in-flight calls before shutting down when they end within the grace period', async () => {
    const { logger } = capturingLogger();
    const started = gate();
    const release = gate();
    const server = await startUserService(logger, {
      getUser: unary(logger, async (req: content.GetUserRequest) => {
        started.open();
        await release.opened;
        return { user: user(req.id) };
      }),
    });
    const client = new content.UserServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    try {
      const call = callUnary(client, client.getUser, { id: 3 }, { defaultDeadlineMs: 10_000, auth: AS_AUTH });
      await started.opened;
      const stopping = server.shutdown(10_000);
      release.open();
      await expect(call).resolves.toEqual({ user: user(3) });
      await stopping;
    } finally {
      client.close();
    }
  });
});
