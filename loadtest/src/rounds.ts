/**
 * Paired rounds: the way the gateway comparison is measured (loadtest/README.md "Method").
 *
 * Targets that are compared with each other form a group (Halo, Hive Gateway and plain Apollo on
 * one query; a REST path through the gateway and direct). Every round measures every target of
 * every group once, the targets of a group back to back and in an order rotated each round, so
 * the two sides of a ratio are always measured minutes apart at most and neither always goes
 * first. A ratio is computed inside each round and the median of those per-round ratios is
 * reported with their min–max: drift of the machine (another process, thermal, a neighbour)
 * moves both sides of a pair and mostly cancels, where a ratio of two long averages would not.
 *
 * Nothing here measures anything: `measure` does (autocannon and /proc in bench code); this
 * module is the schedule and the arithmetic, unit-tested (loadtest/test/rounds.test.ts).
 */
export interface Sample {
  /** Completed requests per second over the interval. */
  rps: number;
  requests: number;
  /** Failed requests: connection errors (autocannon counts its timeouts among them) and non-2xx answers. */
  errors: number;
  /** Of those, requests with no answer within autocannon's 10 s timeout. */
  timeouts?: number;
  p50: number;
  p99: number;
  /** CPU time of the measured server process per completed request (µs); null when none is watched. */
  cpuUsPerRequest: number | null;
  /** CPU of the measured process and of everything behind it (subgraphs, PostgreSQL) per request (µs), when watched. */
  totalCpuUsPerRequest?: number | null;
}

export interface Target {
  id: string;
}

export interface Group<T extends Target = Target> {
  id: string;
  targets: T[];
}

/** One round's samples by target id. */
export type RoundSamples = Record<string, Sample>;

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

/** `items` starting at index `by` (mod length), wrapping around. */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const n = items.length;
  if (n === 0) return [];
  const k = ((by % n) + n) % n;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function spread(values: readonly number[]): Spread {
  const finite = values.filter(Number.isFinite);
  return {
    median: median(finite),
    min: finite.length ? Math.min(...finite) : NaN,
    max: finite.length ? Math.max(...finite) : NaN,
    n: finite.length,
  };
}

/** The order of the whole run: round by round, each group in turn, its targets rotated by the round. */
export function schedule<T extends Target>(groups: readonly Group<T>[], rounds: number): { round: number; group: Group<T>; target: T }[] {
  const out: { round: number; group: Group<T>; target: T }[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const group of groups) for (const target of rotate(group.targets, round)) out.push({ round, group, target });
  }
  return out;
}

/** a ÷ b inside each round in which both were measured (and b is not zero), in round order. */
export function pairedRatios(
  rounds: readonly RoundSamples[],
  a: string,
  b: string,
  of: (s: Sample) => number | null = (s) => s.rps,
): number[] {
  const ratios: number[] = [];
  for (const round of rounds) {
    const x = round[a] ? of(round[a]) : null;
    const y = round[b] ? of(round[b]) : null;
    if (x === null || y === null || !Number.isFinite(x) || !Number.isFinite(y) || y === 0) continue;
    ratios.push(x / y);
  }
  return ratios;
}

/** One target's own figure across rounds (e.g. its req/s or CPU per request). */
export function perRound(rounds: readonly RoundSamples[], id: string, of: (s: Sample) => number | null = (s) => s.rps): number[] {
  return rounds.flatMap((round) => {
    const v = round[id] ? of(round[id]) : null;
    return v === null || !Number.isFinite(v) ? [] : [v];
  });
}

/**
 * Runs the schedule: `measure` once per (round, target), strictly one after another. Answers the
 * samples per round.
 */
export async function runRounds<T extends Target>(
  groups: readonly Group<T>[],
  rounds: number,
  measure: (target: T, round: number) => Promise<Sample>,
): Promise<RoundSamples[]> {
  const out: RoundSamples[] = Array.from({ length: rounds }, () => ({}));
  for (const { round, target } of schedule(groups, rounds)) out[round]![target.id] = await measure(target, round);
  return out;
}
