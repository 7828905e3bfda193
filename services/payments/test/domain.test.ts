import { HaloError } from '@halo/kit/errors';
import { MemoryIdempotencyStore } from '../src/adapters/memory/idempotency';
import { Idempotency, type IdempotencyStore } from '../src/domain/idempotency';
import type { Outcome } from '../src/domain/model';
import {
  amountCents,
  canonicalJson,
  clientOrderId,
  idempotencyKey,
  processorKey,
  productId,
  requestFingerprint,
  RequestInProgress,
  retryAfterSeconds,
} from '../src/domain/rules';
import { SimulatedProcessor } from '../src/adapters/processor/simulated';

/** The rules and the idempotency layer without any I/O (the in-process store on a fake clock). */

describe('rules', () => {
  it('Idempotency-Key: required, at most 255 characters, kept exactly', () => {
    for (const raw of [undefined, null, '', '   ', 42, ['']]) expect(() => idempotencyKey(raw)).toThrow('Idempotency-Key required');
    expect(() => idempotencyKey('k'.repeat(256))).toThrow('Idempotency-Key must be at most 255 characters');
    expect(() => idempotencyKey('k1, k2')).toThrow('Idempotency-Key must not contain a comma');
    expect(idempotencyKey(' a b ')).toBe(' a b ');
    expect(idempotencyKey('k'.repeat(255))).toHaveLength(255);
  });

  it('amount: a JSON number > 0 with at most 2 decimals, in exact cents', () => {
    expect(amountCents(19.99)).toBe(1999);
    expect(amountCents(0.01)).toBe(1);
    expect(amountCents(9_999_999_999.99)).toBe(999_999_999_999);
    for (const raw of [0, -1, 1.001, 0.1 + 0.2, '5', NaN, Infinity, true]) {
      expect(() => amountCents(raw)).toThrow('amount must be a positive number with at most 2 decimals');
    }
    expect(() => amountCents(undefined)).toThrow('amount is required');
    expect(() => amountCents(10_000_000_000)).toThrow('amount must be at most 9999999999.99');
  });

  it('orders: product_id a positive integer (number or digits), client_order_id 1–100 characters, untrimmed', () => {
    expect(productId(5)).toBe(5);
    expect(productId('12')).toBe(12);
    for (const raw of [0, -3, 1.5, 'x', '1e3']) expect(() => productId(raw)).toThrow('product_id must be a positive integer');
    expect(() => productId(undefined)).toThrow('product_id is required');
    expect(clientOrderId(' a ')).toBe(' a ');
    expect(() => clientOrderId('x'.repeat(101))).toThrow('client_order_id must be at most 100 characters');
    expect(() => clientOrderId('')).toThrow('client_order_id is required');
  });

  it('canonical JSON sorts members at every level, keeps arrays in order, drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ a: undefined, b: 'x' })).toBe('{"b":"x"}');
    expect(canonicalJson([1, undefined])).toBe('[1,null]');
    expect(canonicalJson('é')).toBe('"é"');
  });

  it('the fingerprint is SHA-256 of method, path and canonical body: equal for equal meaning, different otherwise', () => {
    const fp = requestFingerprint('POST', '/api/payments', { amount: 10, note: { b: 1, a: 2 } });
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(requestFingerprint('post', '/api/payments', { note: { a: 2, b: 1 }, amount: 10.0 })).toBe(fp);
    expect(requestFingerprint('POST', '/api/payments', { amount: 11, note: { b: 1, a: 2 } })).not.toBe(fp);
    expect(requestFingerprint('PUT', '/api/payments', { amount: 10, note: { b: 1, a: 2 } })).not.toBe(fp);
    expect(requestFingerprint('POST', '/api/other', { amount: 10, note: { b: 1, a: 2 } })).not.toBe(fp);
  });

  it('the processor key is per (caller, key), stable across retries, and bounded', () => {
    expect(processorKey(1, 'k')).toBe(processorKey(1, 'k'));
    expect(processorKey(1, 'k')).not.toBe(processorKey(2, 'k'));
    expect(processorKey(1, 'k'.repeat(255))).toMatch(/^halo_[0-9a-f]{64}$/);
  });

  it('Retry-After is whole seconds, at least 1', () => {
    expect([
      retryAfterSeconds(0),
      retryAfterSeconds(1),
      retryAfterSeconds(1000),
      retryAfterSeconds(1001),
      retryAfterSeconds(29_500),
    ]).toEqual([1, 1, 1, 2, 30]);
  });
});

describe('Idempotency over the in-process store (fake clock)', () => {
  let now = 1_000_000;
  const clock = () => now;
  const LOCK = 30_000;
  const TTL = 86_400_000;
  const make = (store: IdempotencyStore = new MemoryIdempotencyStore(clock)) =>
    new Idempotency(store, { lockMs: LOCK, responseTtlMs: TTL });
  const ok = (body: string): Outcome => ({
    response: { status: 201, headers: { 'content-type': 'application/json' }, body },
    replayed: false,
  });
  const req = (key = 'k', fingerprint = 'f', caller = 1) => ({ caller, key, fingerprint });

  it('runs once, then replays the stored response exactly (replayed: true) without running again', async () => {
    const idem = make();
    let runs = 0;
    const work = async () => ok(`{"n":${++runs}}`);
    expect(await idem.run(req(), work)).toEqual(ok('{"n":1}'));
    expect(await idem.run(req(), work)).toEqual({ ...ok('{"n":1}'), replayed: true });
    expect(runs).toBe(1);
  });

  it('a concurrent request while the first runs → 409 with the lock’s remaining time; a different request → 422', async () => {
    const idem = make();
    let finish!: () => void;
    const first = idem.run(req(), () => new Promise<Outcome>((r) => (finish = () => r(ok('{}')))));
    await Promise.resolve();
    now += 12_300;
    const busy = await idem.run(req(), async () => ok('never')).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(RequestInProgress);
    expect((busy as RequestInProgress).retryAfterSeconds).toBe(18);
    expect(busy).toMatchObject({ kind: 'CONFLICT', message: 'Request in progress', extra: { status: 'processing' } });
    await expect(idem.run(req('k', 'other'), async () => ok('never'))).rejects.toMatchObject({ kind: 'UNPROCESSABLE' });
    finish();
    await first;
    await expect(idem.run(req('k', 'other'), async () => ok('never'))).rejects.toMatchObject({
      kind: 'UNPROCESSABLE',
      message: 'Idempotency-Key reused with a different request',
    });
  });

  it('a failure releases the lock and stores nothing: the retry runs', async () => {
    const idem = make();
    await expect(idem.run(req(), async () => Promise.reject(new HaloError('UNAVAILABLE', 'down')))).rejects.toThrow('down');
    expect(await idem.run(req(), async () => ok('second'))).toEqual(ok('second'));
  });

  it('an expired lock frees the key (its request is then fenced by the database, not here)', async () => {
    const idem = make();
    void idem.run(req(), () => new Promise<Outcome>(() => undefined));
    await Promise.resolve();
    now += LOCK;
    expect(await idem.run(req(), async () => ok('after expiry'))).toEqual(ok('after expiry'));
  });

  it('a late finisher does not release the lock a newer request holds (compare-and-delete)', async () => {
    const store = new MemoryIdempotencyStore(clock);
    const idem = make(store);
    let failOld!: (e: Error) => void;
    const old = idem.run(req('late'), () => new Promise<Outcome>((_, reject) => (failOld = reject)));
    await Promise.resolve();
    now += LOCK; // the old lock expires; a new request takes the key
    let finishNew!: () => void;
    const fresh = idem.run(req('late'), () => new Promise<Outcome>((r) => (finishNew = () => r(ok('new')))));
    await Promise.resolve();
    failOld(new Error('old failed'));
    await expect(old).rejects.toThrow('old failed');
    // The new request still holds the key.
    await expect(idem.run(req('late'), async () => ok('never'))).rejects.toBeInstanceOf(RequestInProgress);
    finishNew();
    await fresh;
  });

  it('stored responses expire after their TTL; keys of different callers never meet', async () => {
    const store = new MemoryIdempotencyStore(clock);
    const idem = make(store);
    await idem.run(req('x', 'f', 1), async () => ok('one'));
    expect(await idem.run(req('x', 'other', 2), async () => ok('two'))).toEqual(ok('two'));
    now += TTL;
    expect(await idem.run(req('x', 'f', 1), async () => ok('again'))).toEqual(ok('again'));
    now += TTL + 1;
    store.sweep();
    expect(store.size).toBe(0);
  });

  it('a store that cannot be reached → 503 Idempotency store unavailable, and the work never runs', async () => {
    const broken: IdempotencyStore = {
      claim: () => Promise.reject(new Error('ECONNREFUSED')),
      complete: () => Promise.reject(new Error('ECONNREFUSED')),
      release: () => Promise.reject(new Error('ECONNREFUSED')),
      ping: () => Promise.reject(new Error('ECONNREFUSED')),
    };
    let ran = false;
    await expect(make(broken).run(req(), async () => ((ran = true), ok('x')))).rejects.toMatchObject({
      kind: 'UNAVAILABLE',
      message: 'Idempotency store unavailable',
    });
    expect(ran).toBe(false);
  });

  it('a store lost after the work (complete fails): the answer still goes out; the database will answer retries', async () => {
    const store = new MemoryIdempotencyStore(clock);
    const flaky: IdempotencyStore = {
      ...store,
      claim: store.claim.bind(store),
      release: store.release.bind(store),
      ping: store.ping.bind(store),
      complete: () => Promise.reject(new Error('gone')),
    };
    expect(await make(flaky).run(req(), async () => ok('done'))).toEqual(ok('done'));
  });
});

describe('the simulated processor', () => {
  const charge = (p: SimulatedProcessor, key: string) => p.charge({ idempotencyKey: key, amountCents: 100, currency: 'USD' });

  it('charges once per key, even for calls that overlap; another key is another charge', async () => {
    const p = new SimulatedProcessor({ latencyMs: 20, failureRate: 0 });
    const [a, b] = await Promise.all([charge(p, 'k1'), charge(p, 'k1')]);
    expect(a).toEqual(b);
    expect(await charge(p, 'k1')).toEqual(a);
    expect((await charge(p, 'k2')).id).not.toBe(a.id);
    expect([p.calls, p.charged]).toEqual([4, 2]);
  });

  it('a failed charge charges nothing and leaves the key free', async () => {
    const p = new SimulatedProcessor({ latencyMs: 0, failureRate: 1 });
    await expect(charge(p, 'k')).rejects.toThrow('simulated processor failure');
    expect(p.charged).toBe(0);
    p.settings.failureRate = 0;
    await expect(charge(p, 'k')).resolves.toMatchObject({ id: expect.stringMatching(/^ch_/) });
    expect(p.charged).toBe(1);
  });
});
