import { setTimeout as sleep } from 'node:timers/promises';
import { content } from '@halo/proto';
import express from 'express';
import request from 'supertest';
import { callUnary, grpc, startGrpcServer, unary, type RunningGrpcServer } from '../grpc/grpc';
import { requestContext } from '../http/http';
import { createLogger } from './logger';
import { currentRequestId, runInRequest } from './request-context';
import { capturingLogger, testIdentity } from '../testing';

/**
 * The request id travels from the edge (HTTP middleware, gRPC wrapper) through every await into
 * log lines and onward gRPC calls, with no parameter carrying it.
 */
const { logger, lines } = capturingLogger();
const seenByPeer: string[] = [];
let peer: RunningGrpcServer;
let client: content.UserServiceClient;

const user = (id: number): content.User => ({
  id,
  name: `U${id}`,
  email: `u${id}@example.com`,
  avatar: '',
  role: 'user',
  createdAt: '2024-01-01T00:00:00.000Z',
});

/** Deep inside a use case: no request object, no id parameter, just the kit's logger and client. */
async function useCase(id: number): Promise<content.User | undefined> {
  await sleep(5);
  logger.info({ id }, 'use case step');
  return (
    await callUnary(
      client,
      client.getUser,
      { id },
      { defaultDeadlineMs: 5_000, auth: { identity: testIdentity('auth'), audience: 'content' } },
    )
  ).user;
}

const app = express();
app.use(requestContext(logger));
app.get('/users/:id', async (req, res) => {
  res.json({ user: await useCase(Number(req.params.id)), inContext: currentRequestId() });
});

beforeAll(async () => {
  const notUsed = unary(logger, async () => {
    throw new Error('not used');
  });
  const implementation: content.UserServiceServer = {
    getUser: unary(logger, async (req: content.GetUserRequest) => {
      await sleep(1);
      seenByPeer.push(currentRequestId() ?? 'none');
      logger.info({ id: req.id }, 'peer handled getUser');
      return { user: user(req.id) };
    }),
    getUsers: notUsed,
    getUserByEmail: notUsed,
    createUser: notUsed,
    deleteUser: notUsed,
  };
  peer = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    services: [
      {
        name: 'halo.content.v1.UserService',
        definition: content.UserServiceService,
        implementation,
        access: { GetUser: ['auth'], GetUsers: ['auth'], GetUserByEmail: ['auth'], CreateUser: ['auth'], DeleteUser: ['auth'] },
      },
    ],
    identity: testIdentity('content'),
    logger,
  });
  client = new content.UserServiceClient(`127.0.0.1:${peer.port}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client.close();
  await peer.shutdown(1_000);
});

describe('request context', () => {
  it('puts the HTTP request id on log lines written after awaits, and on the onward gRPC call', async () => {
    const res = await request(app).get('/users/7').set('X-Request-Id', 'trace-7').expect(200);
    expect(res.body).toEqual({ user: user(7), inContext: 'trace-7' });
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'use case step', id: 7, requestId: 'trace-7' }));
    // The peer read it from metadata into its own request context.
    expect(seenByPeer.at(-1)).toBe('trace-7');
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'peer handled getUser', id: 7, requestId: 'trace-7' }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'request', requestId: 'trace-7', status: 200 }));
  });

  it('keeps concurrent requests apart', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `parallel-${i}`);
    const answers = await Promise.all(
      ids.map((id, i) =>
        request(app)
          .get(`/users/${100 + i}`)
          .set('X-Request-Id', id),
      ),
    );
    expect(answers.map((r) => (r.body as { inContext: string }).inContext)).toEqual(ids);
    for (const [i, id] of ids.entries()) {
      expect(lines.filter((l) => l.msg === 'use case step' && l.id === 100 + i).map((l) => l.requestId)).toEqual([id]);
      expect(lines.filter((l) => l.msg === 'peer handled getUser' && l.id === 100 + i).map((l) => l.requestId)).toEqual([id]);
    }
  });

  it('writes no request id outside a request; a requestId the line sets itself wins, written once', async () => {
    logger.info('at start-up');
    expect(lines.at(-1)).toMatchObject({ msg: 'at start-up' });
    expect(lines.at(-1)).not.toHaveProperty('requestId');
    const raw: string[] = [];
    const own = createLogger('t', 'info', { write: (line: string) => void raw.push(line) });
    await runInRequest({ requestId: 'ambient' }, async () => {
      await sleep(1);
      own.info({ requestId: 'explicit' }, 'explicit id');
      own.info('ambient id');
    });
    expect(raw).toHaveLength(2);
    expect(raw[0]!.match(/"requestId"/g)).toHaveLength(1);
    expect(JSON.parse(raw[0]!)).toMatchObject({ requestId: 'explicit', msg: 'explicit id' });
    expect(JSON.parse(raw[1]!)).toMatchObject({ requestId: 'ambient', msg: 'ambient id' });
  });

  it('gives an explicit requestId on callUnary precedence over the context', async () => {
    await request(app).get('/users/2').set('X-Request-Id', 'ctx-id');
    await callUnary(
      client,
      client.getUser,
      { id: 3 },
      { requestId: 'given-id', defaultDeadlineMs: 5_000, auth: { identity: testIdentity('auth'), audience: 'content' } },
    );
    expect(seenByPeer.at(-1)).toBe('given-id');
  });
});
