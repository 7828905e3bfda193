import { median, pairedRatios, perRound, rotate, runRounds, schedule, spread, type RoundSamples, type Sample } from '../src/rounds';
import { parseCpuList } from '../src/pin';

const sample = (rps: number, cpuUsPerRequest: number | null = null): Sample => ({
  rps,
  requests: rps,
  errors: 0,
  p50: 1,
  p99: 2,
  cpuUsPerRequest,
});

describe('rotate', () => {
  it('starts at the round number and wraps around', () => {
    expect(rotate(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(rotate(['a', 'b', 'c'], 1)).toEqual(['b', 'c', 'a']);
    expect(rotate(['a', 'b', 'c'], 5)).toEqual(['c', 'a', 'b']);
    expect(rotate(['a', 'b'], -1)).toEqual(['b', 'a']);
    expect(rotate([], 3)).toEqual([]);
  });
});

describe('median and spread', () => {
  it('takes the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('ignores non-finite values in the spread', () => {
    expect(spread([1.2, NaN, 0.8, 1.0, Infinity])).toEqual({ median: 1.0, min: 0.8, max: 1.2, n: 3 });
  });
});

describe('schedule', () => {
  it('measures every target once per round, group by group, each group rotated by the round', () => {
    const groups = [
      { id: 'q', targets: [{ id: 'halo' }, { id: 'hive' }, { id: 'apollo' }] },
      { id: 'rest', targets: [{ id: 'gw' }, { id: 'direct' }] },
    ];
    const order = schedule(groups, 3).map(({ round, target }) => `${round}:${target.id}`);
    expect(order).toEqual([
      '0:halo',
      '0:hive',
      '0:apollo',
      '0:gw',
      '0:direct',
      '1:hive',
      '1:apollo',
      '1:halo',
      '1:direct',
      '1:gw',
      '2:apollo',
      '2:halo',
      '2:hive',
      '2:gw',
      '2:direct',
    ]);
  });
});

describe('paired ratios', () => {
  it('divides inside each round and reports the median of the per-round ratios, not the ratio of means', () => {
    // Round 2 ran while the machine was disturbed: both sides dropped, the pair still says 1.5.
    const rounds = [
      { halo: sample(150), hive: sample(100) },
      { halo: sample(30), hive: sample(20) },
      { halo: sample(140), hive: sample(100) },
    ];
    const ratios = pairedRatios(rounds, 'halo', 'hive');
    expect(ratios).toEqual([1.5, 1.5, 1.4]);
    expect(spread(ratios)).toEqual({ median: 1.5, min: 1.4, max: 1.5, n: 3 });
  });

  it('skips a round where a side is missing, has no figure, or the divisor is zero', () => {
    const rounds: RoundSamples[] = [
      { halo: sample(100, 500), apollo: sample(90, 400) },
      { halo: sample(100, 600) },
      { halo: sample(1, null), apollo: sample(1, 400) },
      { halo: sample(5), apollo: sample(0) },
    ];
    expect(pairedRatios(rounds, 'halo', 'apollo', (s) => s.cpuUsPerRequest)).toEqual([1.25]);
    expect(pairedRatios(rounds, 'halo', 'apollo')).toEqual([100 / 90, 1]);
    expect(perRound(rounds, 'halo', (s) => s.cpuUsPerRequest)).toEqual([500, 600]);
  });
});

describe('runRounds', () => {
  it('runs the schedule strictly in order and files each sample under its round', async () => {
    const seen: string[] = [];
    let running = 0;
    const rounds = await runRounds([{ id: 'g', targets: [{ id: 'a' }, { id: 'b' }] }], 2, async (target, round) => {
      expect(running++).toBe(0);
      seen.push(`${round}:${target.id}`);
      await new Promise((r) => setTimeout(r, 1));
      running--;
      return sample(target.id === 'a' ? 10 + round : 5);
    });
    expect(seen).toEqual(['0:a', '0:b', '1:b', '1:a']);
    expect(pairedRatios(rounds, 'a', 'b')).toEqual([2, 2.2]);
  });
});

describe('parseCpuList', () => {
  it('reads the kernel cpulist format', () => {
    expect(parseCpuList('0-3,5\n')).toEqual([0, 1, 2, 3, 5]);
    expect(parseCpuList('1')).toEqual([1]);
    expect(parseCpuList('')).toEqual([]);
  });
});
