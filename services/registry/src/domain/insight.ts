import { badRequest } from '@halo/kit/errors';
import {
  OPERATION_ORDERS,
  type CheckDetail,
  type CheckOptions,
  type CheckRecord,
  type CheckReport,
  type CheckSummary,
  type HourCount,
  type NewCheck,
  type OperationOrder,
  type UsageSeries,
} from './model';

/**
 * What the registry's readers (the read endpoints and the Studio) are given: the arguments they
 * pass, validated (400 naming the one that is wrong), and the records shaped for them.
 */

const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/**
 * A whole number from `min` to `max`, `fallback` when absent; anything else (NaN included, which
 * is what a route passes for a query string that is no number) is 400 naming the parameter.
 */
export function wholeNumber(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
  what = 'a whole number',
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) throw badRequest(`${name} must be ${what} from ${min} to ${max}`);
  return value;
}

/** A window of usage, as a check's `options.windowDays`: at most what is kept. */
export const daysFrom = (days: number | undefined, fallback: number, retention: number) =>
  wholeNumber('days', days, fallback, 1, retention, 'a whole number of days');

const NAME = '[_A-Za-z][_0-9A-Za-z]*';
/** `Type`, `Type.field`, `Type.field.arg`, or `Enum.VALUE` (shaped as `Type.field`): what an operation records. */
const COORDINATE = new RegExp(`^${NAME}(\\.${NAME}){0,2}$`);

export function coordinateFrom(value: unknown): string {
  if (value === undefined || value === '') throw badRequest('coordinate is required (Type, Type.field, Type.field.arg or Enum.VALUE)');
  if (typeof value !== 'string' || value.length > 300 || !COORDINATE.test(value)) {
    throw badRequest(`coordinate must be Type, Type.field, Type.field.arg or Enum.VALUE, not ${JSON.stringify(value).slice(0, 320)}`);
  }
  return value;
}

/** How to order the top operations: `requests` when absent; 400 naming the choices otherwise. */
export function operationOrderFrom(value: unknown): OperationOrder {
  if (value === undefined) return 'requests';
  if (typeof value !== 'string' || !(OPERATION_ORDERS as readonly string[]).includes(value)) {
    throw badRequest(`by must be one of ${OPERATION_ORDERS.join(', ')}`);
  }
  return value as OperationOrder;
}

export function serviceFrom(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > 100) throw badRequest('service must be a service name');
  return value;
}

/** The check record of a check, publish or rollback: a publish with nothing to do says which version stays current. */
export function unchangedReport(service: string, version: number, options: CheckOptions): CheckReport {
  return {
    ok: true,
    service,
    composition: { ok: true, errors: [] },
    rest: { ok: true, errors: [] },
    changes: [],
    notes: [`unchanged: the contract is version ${version}'s, already current`],
    options,
  };
}

/** What a check, publish or rollback recorded: `NewCheck` without what the caller knows. */
export function checkOf(
  kind: NewCheck['kind'],
  outcome:
    | { kind: 'checked'; report: CheckReport }
    | { kind: 'published'; version: number; report: CheckReport }
    | { kind: 'refused'; report: CheckReport }
    | { kind: 'unchanged'; version: number },
  service: string,
  options: CheckOptions,
): Pick<NewCheck, 'kind' | 'service' | 'ok' | 'outcome' | 'report' | 'version'> {
  switch (outcome.kind) {
    case 'checked':
      return {
        kind,
        service,
        ok: outcome.report.ok,
        outcome: outcome.report.ok ? 'passed' : 'refused',
        report: outcome.report,
        version: null,
      };
    case 'published':
      return { kind, service, ok: true, outcome: 'published', report: outcome.report, version: outcome.version };
    case 'refused':
      return { kind, service, ok: false, outcome: 'refused', report: outcome.report, version: null };
    case 'unchanged':
      return {
        kind,
        service,
        ok: true,
        outcome: 'unchanged',
        report: unchangedReport(service, outcome.version, options),
        version: outcome.version,
      };
  }
}

export function checkSummary(c: CheckRecord): CheckSummary {
  return {
    id: c.id,
    service: c.service,
    kind: c.kind,
    author: c.author,
    ok: c.ok,
    outcome: c.outcome,
    version: c.version,
    acknowledgement: c.acknowledgement,
    createdAt: c.createdAt,
    changes: c.report.changes,
    notes: c.report.notes,
    errors: { composition: c.report.composition.errors, rest: c.report.rest.errors },
  };
}

export const checkDetail = (c: CheckRecord): CheckDetail => ({ ...checkSummary(c), report: c.report });

/**
 * The window's hours, oldest first: every hour bucket a check of the same window counts (`hour >=
 * since`), up to the current one.
 */
export function windowHours(since: Date, now: Date): string[] {
  const first = Math.ceil(since.getTime() / HOUR_MS) * HOUR_MS;
  const hours: string[] = [];
  for (let t = first; t <= now.getTime(); t += HOUR_MS) hours.push(new Date(t).toISOString());
  return hours;
}

/** One row per client version, a count for every hour (0 when it sent nothing), busiest first. */
export function seriesOf(hours: readonly string[], counts: readonly HourCount[]): UsageSeries['series'] {
  const index = new Map(hours.map((h, i) => [h, i]));
  const byClient = new Map<string, { client: string; clientVersion: string | null; counts: number[]; total: number }>();
  for (const c of counts) {
    const i = index.get(c.hour);
    if (i === undefined) continue;
    const key = `${c.client}\n${c.clientVersion ?? ''}`;
    let s = byClient.get(key);
    if (!s) byClient.set(key, (s = { client: c.client, clientVersion: c.clientVersion, counts: hours.map(() => 0), total: 0 }));
    s.counts[i]! += c.count;
    s.total += c.count;
  }
  return [...byClient.values()]
    .sort((a, b) => b.total - a.total || a.client.localeCompare(b.client) || (a.clientVersion ?? '').localeCompare(b.clientVersion ?? ''))
    .map(({ total: _t, ...s }) => s);
}
