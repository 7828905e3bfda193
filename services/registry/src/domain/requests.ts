import { parseContract, type Contract } from '@halo/contracts';
import { badRequest } from '@halo/kit/errors';
import type { CheckOptions } from './model';

/**
 * What a check, publish and rollback body carries, read and validated as the HTTP layer receives
 * it (its manifest's body rules: 400 naming what is wrong, in the order the fields are read), and
 * the typed input the registry's operations take.
 */

/** The options a request gave; each absent one is the registry's default (`checkOptions`). */
export interface CheckOptionsInput {
  /** A whole number from 1, or NaN for anything else: its range is the registry's (the usage kept). */
  windowDays?: number;
  thresholdPercent?: number;
  excludeClients?: string[];
}

/** `POST /v1/check` and `POST /v1/publish`. */
export interface CheckInput {
  contract: Contract;
  options: CheckOptionsInput;
  acknowledge?: string;
}

/** `POST /v1/rollback`: republish version `to` of `service`. */
export interface RollbackInput {
  service: string;
  to: number;
  options: CheckOptionsInput;
  acknowledge?: string;
}

const member = (body: unknown, name: string): unknown =>
  typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;

/** The service a request names (`contract.service` of a check, `service` of a rollback), read only to decide who may ask. */
export function serviceNamed(body: unknown, path: 'contract.service' | 'service'): string | undefined {
  const named = path === 'service' ? member(body, 'service') : member(member(body, 'contract'), 'service');
  return typeof named === 'string' && named !== '' ? named : undefined;
}

export function contractFrom(body: unknown): Contract {
  const contract = member(body, 'contract');
  if (contract === undefined) throw badRequest('contract is required');
  const parsed = parseContract(contract);
  if ('error' in parsed) throw badRequest(parsed.error);
  return parsed.contract;
}

export function acknowledgeFrom(body: unknown): string | undefined {
  const a = member(body, 'acknowledge');
  if (a === undefined || a === null) return undefined;
  if (typeof a !== 'string' || a.trim() === '' || a.length > 1000)
    throw badRequest('acknowledge must be a non-empty reason (at most 1000 characters)');
  return a.trim();
}

/**
 * The request's `options`, 400 naming a bad one. `windowDays` is only read as a number here (NaN
 * when it is not a whole number from 1, and then nothing after it is checked, so its own answer
 * comes first): its upper bound is the usage the registry keeps, which `checkOptions` applies.
 */
export function checkOptionsFrom(body: unknown): CheckOptionsInput {
  const o = member(body, 'options');
  const given = o === undefined || o === null ? {} : o;
  if (typeof given !== 'object' || Array.isArray(given)) throw badRequest('options must be an object');
  const { windowDays, thresholdPercent, excludeClients, ...rest } = given as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw badRequest(`options.${unknown} is not an option (windowDays, thresholdPercent, excludeClients)`);
  if (windowDays !== undefined && (!Number.isInteger(windowDays) || (windowDays as number) < 1)) return { windowDays: NaN };
  if (thresholdPercent !== undefined && (typeof thresholdPercent !== 'number' || !(thresholdPercent >= 0 && thresholdPercent <= 100))) {
    throw badRequest('options.thresholdPercent must be a number from 0 to 100');
  }
  if (
    excludeClients !== undefined &&
    (!Array.isArray(excludeClients) ||
      excludeClients.length > 50 ||
      excludeClients.some((c) => typeof c !== 'string' || c === '' || c.length > 64))
  ) {
    throw badRequest('options.excludeClients must be a list of at most 50 client names (1 to 64 characters)');
  }
  return {
    ...(windowDays !== undefined ? { windowDays: windowDays as number } : {}),
    ...(thresholdPercent !== undefined ? { thresholdPercent } : {}),
    ...(excludeClients !== undefined ? { excludeClients: [...(excludeClients as string[])] } : {}),
  };
}

/** A check's or publish's body: contract, then options, then the acknowledgement. */
export function checkRequestFrom(body: unknown): CheckInput {
  const contract = contractFrom(body);
  const options = checkOptionsFrom(body);
  const acknowledge = acknowledgeFrom(body);
  return { contract, options, ...(acknowledge !== undefined ? { acknowledge } : {}) };
}

/** A rollback's body: service, the version to roll back to, options, the acknowledgement. */
export function rollbackRequestFrom(body: unknown): RollbackInput {
  const service = member(body, 'service');
  if (typeof service !== 'string' || service === '') throw badRequest('service is required');
  const to = member(body, 'to');
  if (to === undefined) throw badRequest("to is required: the version to roll back to (see the service's versions)");
  if (typeof to !== 'number' || !Number.isInteger(to) || to < 1) throw badRequest('to must be a version number (an integer from 1)');
  const options = checkOptionsFrom(body);
  const acknowledge = acknowledgeFrom(body);
  return { service, to, options, ...(acknowledge !== undefined ? { acknowledge } : {}) };
}

/** The options a check runs with: the request's, each defaulting to the registry's; 400 for a window beyond the usage kept. */
export function checkOptions(given: CheckOptionsInput, defaults: CheckOptions, retention: number): CheckOptions {
  const { windowDays } = given;
  if (windowDays !== undefined && (!Number.isInteger(windowDays) || windowDays < 1 || windowDays > retention)) {
    throw badRequest(`options.windowDays must be a whole number of days from 1 to ${retention} (the usage kept)`);
  }
  return {
    windowDays: windowDays ?? defaults.windowDays,
    thresholdPercent: given.thresholdPercent ?? defaults.thresholdPercent,
    excludeClients: [...(given.excludeClients ?? defaults.excludeClients)],
  };
}

/** A version number as a path or query parameter (`/versions/:version`, `?from&to`): 400 naming the parameter otherwise. */
export function versionNumber(name: string): (raw: unknown) => number {
  return (raw) => {
    if (typeof raw !== 'string' || !/^[1-9]\d{0,8}$/.test(raw)) throw badRequest(`${name} must be a version number`);
    return Number(raw);
  };
}
