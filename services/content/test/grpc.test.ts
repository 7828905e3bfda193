import { HaloError } from '@halo/kit/errors';
import { callUnary, grpc, HealthClient } from '@halo/kit/grpc';
import { content } from '@halo/proto';
import { testIdentity } from '@halo/kit/testing';
import { insertUsers, startTestContent, type InsertedUser, type TestContent } from './helpers';

let t: TestContent;
let client: content.UserServiceClient;
let health: HealthClient;
let ana: InsertedUser;
let ben: InsertedUser;
let cy: InsertedUser;

/** Called as auth, the one service content's UserService lists (service identity: e2e/service-identity.test.ts). */
const OPTS = { defaultDeadlineMs: 2000, requestId: 'test-1', auth: { identity: testIdentity('auth'), audience: 'content' } };

const check = (service: string) => callUnary(health, health.Check, { service }, OPTS);

beforeAll(async () => {
  t = await startTestContent();
  [ana, ben, cy] = (await insertUsers(t.db, [
    { name: 'Ana', email: 'ana@example.com', avatar: 'https://img.example.com/ana.png' },
    { name: 'Ben', email: 'ben@example.com', role: 'admin' },
    { name: 'Cy', email: 'cy@example.com' },
  ])) as [InsertedUser, InsertedUser, InsertedUser];
  const address = `127.0.0.1:${t.service.grpcPort}`;
  client = new content.UserServiceClient(address, grpc.credentials.createInsecure());
  health = new HealthClient(address, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  health?.close();
  await t?.close();
});

describe('UserService.GetUser', () => {
  it('answers a known user', async () => {
    const res = await callUnary(client, client.getUser, { id: ana.id }, OPTS);
    expect(res.user).toEqual({
      id: ana.id,
      name: 'Ana',
      email: 'ana@example.com',
      avatar: 'https://img.example.com/ana.png',
      role: 'user',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
  });

  it('a user without an avatar gets the proto default (empty string)', async () => {
    const res = await callUnary(client, client.getUser, { id: ben.id }, OPTS);
    expect(res.user).toMatchObject({ id: ben.id, name: 'Ben', role: 'admin', avatar: '' });
  });

  it('an unknown id → HaloError NOT_FOUND', async () => {
    const err = await callUnary(client, client.getUser, { id: 999_999 }, OPTS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect(err).toMatchObject({ kind: 'NOT_FOUND', message: 'Not found' });
  });

  it('a negative id → HaloError BAD_REQUEST Invalid id', async () => {
    const err = await callUnary(client, client.getUser, { id: -1 }, OPTS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect(err).toMatchObject({ kind: 'BAD_REQUEST', message: 'Invalid id' });
  });
});

describe('UserService.GetUsers', () => {
  it('keeps the request order and drops unknown ids', async () => {
    const res = await callUnary(client, client.getUsers, { ids: [cy.id, 999_999, ana.id, ben.id, 888_888] }, OPTS);
    expect(res.users.map((u) => [u.id, u.name])).toEqual([
      [cy.id, 'Cy'],
      [ana.id, 'Ana'],
      [ben.id, 'Ben'],
    ]);
  });

  it('an empty or all-unknown list → no users', async () => {
    expect((await callUnary(client, client.getUsers, { ids: [] }, OPTS)).users).toEqual([]);
    expect((await callUnary(client, client.getUsers, { ids: [999_999] }, OPTS)).users).toEqual([]);
  });
});

describe('UserService.GetUserByEmail', () => {
  it('is case-insensitive (and ignores surrounding spaces)', async () => {
    for (const email of ['ben@example.com', 'BEN@Example.COM', '  Ben@example.com ']) {
      const res = await callUnary(client, client.getUserByEmail, { email }, OPTS);
      expect(res.user).toMatchObject({ id: ben.id, email: 'ben@example.com' });
    }
  });

  it('an unknown email → HaloError NOT_FOUND', async () => {
    const err = await callUnary(client, client.getUserByEmail, { email: 'nobody@example.com' }, OPTS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HaloError);
    expect(err).toMatchObject({ kind: 'NOT_FOUND' });
  });
});

describe('grpc.health.v1', () => {
  it('reports SERVING for halo.content.v1.UserService and for the server as a whole', async () => {
    expect(await check('halo.content.v1.UserService')).toEqual({ status: 'SERVING' });
    expect(await check('')).toEqual({ status: 'SERVING' });
  });

  it('an unknown service → NOT_FOUND', async () => {
    await expect(check('halo.nope.v1.Nothing')).rejects.toMatchObject({ kind: 'NOT_FOUND' });
  });
});
