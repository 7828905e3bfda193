import { kneeOf } from '../src/curves-bench';

/** A point of a curve at `level` of saturation, 400 req/s offered at 100 %, over the bench's default 10 s. */
const point = (level: number, p99: number, failed = 0, dropped = 0) => ({
  target: 'Halo',
  level,
  offered: 400 * level,
  rps: 400 * level,
  requests: 4000 * level,
  errors: failed,
  dropped,
  p50: p99 / 4,
  p95: p99 / 2,
  p99,
  cpuUsPerRequest: 1000,
});

describe('the knee of a latency curve (bench:curves)', () => {
  it('is the first level whose p99 exceeds three times the lowest level’s, whatever order the points come in', () => {
    expect(kneeOf([point(1, 80), point(0.25, 20), point(0.9, 61), point(0.5, 25)])?.level).toBe(0.9);
  });

  it('is a level that fails or drops more than 1 % of what was offered, even with a flat p99', () => {
    expect(kneeOf([point(0.25, 20), point(0.5, 20, 0, 19), point(0.75, 20, 31)])?.level).toBe(0.75);
    expect(kneeOf([point(0.25, 20), point(0.5, 20, 10, 11)])?.level).toBe(0.5);
  });

  it('is absent when the curve stays flat', () => {
    expect(kneeOf([point(0.25, 20), point(0.5, 22), point(1.1, 59)])).toBeUndefined();
  });
});
