import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { content } from '@halo/proto';
import { decodeJwt } from 'jose';
import { env } from '../config/config';
import { SERVICE_TOKEN_METADATA, serviceIdentityFor } from '../auth/service-identity';
import { callUnary, grpc, startGrpcServer, type RunningGrpcServer } from '../grpc/grpc';
import type { PeerChannel } from '../grpc/peer-channel';
import { createLogger } from '../logging/logger';
import { openTestDb, TEST_SERVICE_ENV, testIdentityEnv, type TestDb } from '../testing';
import { defineService } from './define-service';

/**
 * `defineService({ peers })` against a real gRPC server: a service borrowing auth's name calls a
 * server standing in for content (auth → content is an edge of GRPC_CALLS, so the test keys
 * verify it) through the client its definition makes over the kit's channel.
 */
const logger = createLogger('t', 'silent');
const root = mkdtempSync(join(tmpdir(), 'halo-peers-'));
mkdirSync(join(root, 'migrations'));

/** What the stand-in for content saw of each call: the service token and the deadline. */
const seen: { token: string; deadline: number; at: number }[] = [];
let server: RunningGrpcServer;

const user: content.User = {
  id: 7,
  name: 'Ada',
  email: 'ada@example.com',
  avatar: '',
  role: 'user',
  createdAt: '2024-01-01T00:00:00.000Z',
};
const handle: grpc.handleUnaryCall<content.GetUserRequest, content.GetUserResponse> = (call, callback) => {
  seen.push({ token: String(call.metadata.get(SERVICE_TOKEN_METADATA)[0]), deadline: Number(call.getDeadline()), at: Date.now() });
  callback(null, { user: { ...user, id: call.request.id } });
};
const refuse: grpc.handleUnaryCall<unknown, unknown> = (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED });

/** The service's own client module, as a service writes one in `src/grpc/clients/`. */
let channel: PeerChannel | undefined;
let closed = 0;
function contentNames(ch: PeerChannel) {
  channel = ch;
  const client = ch.client(content.UserServiceClient);
  return {
    client,
    nameOf: async (id: number) => (await callUnary(client, client.getUser, { id }, ch.read)).user?.name,
    close: () => {
      closed++;
      client.close();
    },
  };
}

const caller = defineService({
  name: 'auth',
  root,
  config: { CONTENT_GRPC_ADDR: env.str('127.0.0.1:1') },
  peers: { names: { service: 'content', client: contentNames } },
  domain: ({ peers }) => ({ names: peers.names }),
});

let db: TestDb;

beforeAll(async () => {
  db = await openTestDb('peers');
  server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    services: [
      {
        name: 'halo.content.v1.UserService',
        definition: content.UserServiceService,
        implementation: { getUser: handle, getUsers: refuse, getUserByEmail: refuse, createUser: refuse, deleteUser: refuse },
        access: { GetUser: ['auth'], GetUsers: [], GetUserByEmail: [], CreateUser: [], DeleteUser: [] },
      },
    ],
    identity: serviceIdentityFor('content', testIdentityEnv('content')),
    logger,
  });
});

afterAll(async () => {
  await server?.shutdown(1_000);
  await db?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe('defineService({ peers })', () => {
  it('hands the domain a client of the peer with its address, deadline, token audience and policy, closed on shutdown', async () => {
    const config = caller.loadConfig({
      ...TEST_SERVICE_ENV,
      ...testIdentityEnv('auth'),
      CONTENT_GRPC_ADDR: `127.0.0.1:${server.port}`,
      GRPC_DEADLINE_MS: '1500',
    });
    const started = await caller.start(config, logger, { db });
    let stopped = false;
    try {
      expect(channel).toMatchObject({ peer: 'content', address: `127.0.0.1:${server.port}`, deadlineMs: 1500 });
      expect(channel!.policy?.peer).toBe('content');
      expect(channel!.read).toMatchObject({ defaultDeadlineMs: 1500, auth: { audience: 'content' }, idempotent: true });
      expect(channel!.write.idempotent).toBeUndefined();

      // Typed as the definition's client returns it: `nameOf` is a method of `peers.names`.
      expect(await started.domain.names.nameOf(42)).toBe('Ada');
      const call = seen.at(-1)!;
      expect(decodeJwt(call.token)).toMatchObject({ iss: 'auth', aud: 'content' });
      expect(call.deadline - call.at).toBeGreaterThan(1000);
      expect(call.deadline - call.at).toBeLessThanOrEqual(1500);

      // The call went through the peer's policy, measured in the service's own metrics.
      const text = await (await fetch(`http://127.0.0.1:${started.httpPort}/metrics`)).text();
      expect(text).toMatch(/halo_grpc_client_handling_seconds_count\{service="auth",peer="content",method="[^"]*GetUser",code="OK"\} 1/);
      expect(text).toContain('halo_grpc_client_breaker_open{peer="content",service="auth"} 0');

      expect(closed).toBe(0);
      await started.stop();
      stopped = true;
      expect(closed).toBe(1);
      const state = started.domain.names.client.getChannel().getConnectivityState(false);
      expect(state).toBe(grpc.connectivityState.SHUTDOWN);
    } finally {
      if (!stopped) await started.stop();
    }
  });

  it('refuses to start when the service declares no address for a peer', async () => {
    const undeclared = defineService({
      name: 'auth',
      root,
      peers: { names: { service: 'content', client: contentNames } },
      domain: ({ peers }) => peers.names,
    });
    const config = undeclared.loadConfig({ ...TEST_SERVICE_ENV, ...testIdentityEnv('auth') });
    await expect(undeclared.start(config, logger, { db })).rejects.toThrow(
      "peers.names calls content, but the service's config declares no CONTENT_GRPC_ADDR",
    );
  });
});
