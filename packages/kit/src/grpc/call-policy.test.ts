import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { CallPolicy } from './call-policy';
import { callUnary } from './grpc';
import { isHaloError } from '../errors/errors';
import { grpcClientMetrics } from '../metrics/metrics';
import { metricValue } from '../testing';

/**
 * The call policy against a real gRPC server that answers with the status each test scripts:
 * what is retried, what opens the breaker, and that the whole call keeps its one deadline.
 */
const json = {
  serialize: (v: unknown) => Buffer.from(JSON.stringify(v ?? {})),
  deserialize: (b: Buffer) => JSON.parse(b.toString() || '{}') as unknown,
};
const definition: grpc.ServiceDefinition = {
  ping: {
    path: '/halo.test.Pinger/Ping',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};

let server: grpc.Server;
let client: grpc.Client & { ping: (...args: never[]) => grpc.ClientUnaryCall };
/** Calls the server received from the running test (each test tags its calls with its name). */
let calls = 0;
let testTag = '';
/** What the server answers to each of the running test's calls (numbered): a status code (OK = a reply). */
let script: (n: number) => grpc.status = () => grpc.status.OK;

beforeAll(async () => {
  server = new grpc.Server();
  server.addService(definition, {
    ping: (call: { request: { tag?: string } }, callback: grpc.sendUnaryData<unknown>) => {
      // An attempt an earlier test left in flight (its caller gave up at its deadline) may still
      // arrive on a loaded host: it is refused and not counted.
      const code = call.request.tag === testTag ? script(++calls) : grpc.status.UNAVAILABLE;
      if (code === grpc.status.OK) callback(null, { ok: true });
      else callback({ code, details: `scripted ${grpc.status[code]}` });
    },
  });
  const port = await new Promise<number>((ok, fail) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? fail(err) : ok(p))),
  );
  const Client = grpc.makeGenericClientConstructor(definition, 'Pinger');
  client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as typeof client;
});

afterAll(() => {
  client?.close();
  server?.forceShutdown();
});

beforeEach(() => {
  calls = 0;
  testTag = expect.getState().currentTestName ?? '';
  script = () => grpc.status.OK;
});

// A deadline far above any backoff, so that only the deadline test meets it on a loaded host.
const ping = (policy: CallPolicy, idempotent: boolean, deadlineMs = 10_000) =>
  callUnary(client, client.ping as never, { tag: testTag }, { defaultDeadlineMs: deadlineMs, policy, idempotent });

const failsWith = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(isHaloError(err)).toBe(true);
  return err as { kind: string; message: string };
};

it('a read whose peer was unavailable is retried, within GRPC_RETRIES', async () => {
  const policy = new CallPolicy('pinger', { retries: 2, breakerThreshold: 10, halfOpenMs: 1_000 });
  script = (n) => (n <= 2 ? grpc.status.UNAVAILABLE : grpc.status.OK);
  await expect(ping(policy, true)).resolves.toEqual({ ok: true });
  expect(calls).toBe(3);

  calls = 0;
  script = () => grpc.status.UNAVAILABLE;
  expect(await failsWith(ping(policy, true))).toMatchObject({ kind: 'UNAVAILABLE', message: 'Upstream service unavailable' });
  expect(calls).toBe(3); // the first attempt and 2 retries
});

it('a write is never retried, and a business answer (NOT_FOUND) is never retried', async () => {
  const policy = new CallPolicy('pinger', { retries: 2, breakerThreshold: 10, halfOpenMs: 1_000 });
  script = () => grpc.status.UNAVAILABLE;
  await failsWith(ping(policy, false));
  expect(calls).toBe(1);
  calls = 0;
  script = () => grpc.status.NOT_FOUND;
  expect(await failsWith(ping(policy, true))).toMatchObject({ kind: 'NOT_FOUND' });
  expect(calls).toBe(1);
});

it('consecutive failures open the breaker: calls fail fast without reaching the peer, then one probe closes it', async () => {
  const policy = new CallPolicy('pinger', { retries: 0, breakerThreshold: 3, halfOpenMs: 200 });
  // NOT_FOUND answers are the peer working: they never open it.
  script = () => grpc.status.NOT_FOUND;
  for (let i = 0; i < 5; i++) await failsWith(ping(policy, true));
  expect(policy.state).toBe('closed');

  script = () => grpc.status.UNAVAILABLE;
  for (let i = 0; i < 3; i++) await failsWith(ping(policy, true));
  expect(policy.state).toBe('open');
  const before = calls;
  const started = Date.now();
  expect(await failsWith(ping(policy, true))).toMatchObject({ kind: 'UNAVAILABLE', message: 'Upstream service unavailable' });
  expect(calls).toBe(before); // never sent
  expect(Date.now() - started).toBeLessThan(1_000); // far below the 10 s deadline it would otherwise wait

  script = () => grpc.status.OK;
  await new Promise((r) => setTimeout(r, 250));
  await expect(ping(policy, true)).resolves.toEqual({ ok: true });
  expect(policy.state).toBe('closed');
});

it('retries never outlive the call deadline', async () => {
  const policy = new CallPolicy('pinger', { retries: 1_000, breakerThreshold: 10_000, halfOpenMs: 1_000 });
  script = () => grpc.status.UNAVAILABLE;
  const started = Date.now();
  // Past the deadline an attempt fails as DEADLINE_EXCEEDED, which is not retried: the kit's 503.
  expect(await failsWith(ping(policy, true, 300))).toMatchObject({ kind: 'UNAVAILABLE', message: 'Upstream service unavailable' });
  expect(Date.now() - started).toBeLessThan(3_000); // 1,000 retries would take minutes without the deadline
});

describe('metrics (the calling process’s halo_grpc_client_* series)', () => {
  const METHOD = 'halo.test.Pinger/Ping';
  let registry: Registry;
  let policy: CallPolicy;
  const scrape = () => registry.metrics();
  const timed = async (code: string) =>
    metricValue(await scrape(), 'halo_grpc_client_handling_seconds_count', { peer: 'pinger', method: METHOD, code });

  beforeEach(() => {
    registry = new Registry();
    policy = new CallPolicy('pinger', { retries: 2, breakerThreshold: 3, halfOpenMs: 200 }, undefined, grpcClientMetrics(registry));
  });

  it('times each call once by peer, method and final status, and counts its retries', async () => {
    script = (n) => (n <= 2 ? grpc.status.UNAVAILABLE : grpc.status.OK);
    await ping(policy, true);
    expect(calls).toBe(3);
    script = () => grpc.status.NOT_FOUND;
    await failsWith(ping(policy, true));
    const text = await scrape();
    expect(await timed('OK')).toBe(1);
    expect(await timed('NOT_FOUND')).toBe(1);
    expect(metricValue(text, 'halo_grpc_client_retries_total', { peer: 'pinger', method: METHOD })).toBe(2);
    // The retried call's time includes its backoffs (≥ 25 ms before the first retry).
    expect(metricValue(text, 'halo_grpc_client_handling_seconds_sum', { code: 'OK' })).toBeGreaterThan(0.02);
  });

  it('reports the breaker: opened (counted), calls failed fast as CIRCUIT_OPEN, then closed again', async () => {
    const breaker = async () => metricValue(await scrape(), 'halo_grpc_client_breaker_open', { peer: 'pinger' });
    expect(await breaker()).toBe(0);
    script = () => grpc.status.UNAVAILABLE;
    // A write: not retried, so three calls are three failed attempts, and the breaker opens.
    for (let i = 0; i < 3; i++) await failsWith(ping(policy, false));
    expect(await timed('UNAVAILABLE')).toBe(3);
    expect(await breaker()).toBe(1);
    expect(metricValue(await scrape(), 'halo_grpc_client_breaker_opened_total', { peer: 'pinger' })).toBe(1);
    await failsWith(ping(policy, false));
    expect(await timed('CIRCUIT_OPEN')).toBe(1);

    script = () => grpc.status.OK;
    await new Promise((r) => setTimeout(r, 250));
    await ping(policy, false);
    expect(await breaker()).toBe(0);
    expect(await timed('OK')).toBe(1);
  });
});
