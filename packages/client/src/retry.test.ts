import { decideRetry, DEFAULT_RETRY, isRetryable, parseRetryAfter, type AttemptOutcome } from './retry.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const res = (status: number, retryAfter: string | null = null, inProgress = false): AttemptOutcome => ({
  kind: 'response',
  status,
  retryAfter,
  inProgress,
});
const ctx = (retriesDone: number, over: Partial<{ retryable: boolean; hasIdempotencyKey: boolean }> = {}) => ({
  retriesDone,
  retryable: true,
  hasIdempotencyKey: false,
  nowMs: NOW,
  ...over,
});

/** The whole schedule of one call whose every attempt ends in `outcome`: the waits before each retry. */
function schedule(outcome: AttemptOutcome, over: Partial<{ retryable: boolean; hasIdempotencyKey: boolean }> = {}) {
  const waits: number[] = [];
  for (let n = 0; ; n++) {
    const d = decideRetry(outcome, ctx(n, over));
    if (!d.retry) return waits;
    waits.push(d.waitMs);
  }
}

describe('decideRetry (the spec: < 500 never; ≥ 500 and network 3 times after 1, 2, 4 s; idempotent calls only)', () => {
  it.each([500, 502, 503, 504, 599])('%i: three retries after 1, 2, 4 s', (status) => {
    expect(schedule(res(status))).toEqual([1000, 2000, 4000]);
  });

  it('a network failure: three retries after 1, 2, 4 s', () => {
    expect(schedule({ kind: 'network' })).toEqual([1000, 2000, 4000]);
  });

  it.each([200, 201, 204, 301, 400, 401, 403, 404, 405, 408, 409, 413, 422, 429])('%i: never', (status) => {
    expect(schedule(res(status, '1'))).toEqual([]);
  });

  it('a call that is not idempotent is never retried, whatever happened', () => {
    expect(schedule(res(503), { retryable: false })).toEqual([]);
    expect(schedule({ kind: 'network' }, { retryable: false })).toEqual([]);
  });

  it("503's Retry-After replaces the backoff; other 5xx ignore it", () => {
    expect(schedule(res(503, '3'))).toEqual([3000, 3000, 3000]);
    expect(schedule(res(500, '3'))).toEqual([1000, 2000, 4000]);
  });

  it('a Retry-After beyond maxRetryAfterMs stops the retries', () => {
    expect(schedule(res(503, '31'))).toEqual([]);
    expect(schedule(res(503, '30'))).toEqual([30_000, 30_000, 30_000]);
  });

  it('409 in progress: waited out only with an Idempotency-Key, at its Retry-After (the backoff without one)', () => {
    expect(schedule(res(409, '2', true), { hasIdempotencyKey: true })).toEqual([2000, 2000, 2000]);
    expect(schedule(res(409, null, true), { hasIdempotencyKey: true })).toEqual([1000, 2000, 4000]);
    expect(schedule(res(409, '2', true), { hasIdempotencyKey: false })).toEqual([]);
    expect(schedule(res(409, '2', false), { hasIdempotencyKey: true })).toEqual([]);
    expect(decideRetry(res(409, '2', true), ctx(0, { hasIdempotencyKey: true }), { ...DEFAULT_RETRY, retryInProgress: false })).toEqual({
      retry: false,
    });
  });

  it('the schedule is configuration', () => {
    const opts = { ...DEFAULT_RETRY, retries: 5, delaysMs: [10, 20] };
    const waits = [0, 1, 2, 3, 4, 5].map((n) => decideRetry(res(500), ctx(n), opts));
    expect(waits).toEqual([
      { retry: true, waitMs: 10 },
      { retry: true, waitMs: 20 },
      { retry: true, waitMs: 20 },
      { retry: true, waitMs: 20 },
      { retry: true, waitMs: 20 },
      { retry: false },
    ]);
  });
});

describe('isRetryable', () => {
  it.each(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'get'])('%s is idempotent', (m) => expect(isRetryable(m, false)).toBe(true));
  it.each(['POST', 'PATCH'])('%s is not, unless it carries an Idempotency-Key or the contract says so', (m) => {
    expect(isRetryable(m, false)).toBe(false);
    expect(isRetryable(m, true)).toBe(true);
    expect(isRetryable(m, false, true)).toBe(true);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates', () => {
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', NOW)).toBe(10_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', NOW)).toBe(0);
  });
  it.each([null, undefined, '', '-5', '1.5', 'soon'])('%p is no hint', (v) => expect(parseRetryAfter(v, NOW)).toBeNull());
});
