import { parseContract, type Contract } from '@halo/contracts';
import { badRequest } from '@halo/kit/errors';
import type { CheckOptions } from './model';

/** What a check, publish and rollback body carries, read and validated (400 naming what is wrong). */

export function contractFrom(body: unknown): Contract {
  const contract = (body as { contract?: unknown } | null)?.contract;
  if (contract === undefined) throw badRequest('contract is required');
  const parsed = parseContract(contract);
  if ('error' in parsed) throw badRequest(parsed.error);
  return parsed.contract;
}

export function acknowledgeFrom(body: unknown): string | undefined {
  const a = (body as { acknowledge?: unknown } | null)?.acknowledge;
  if (a === undefined || a === null) return undefined;
  if (typeof a !== 'string' || a.trim() === '' || a.length > 1000)
    throw badRequest('acknowledge must be a non-empty reason (at most 1000 characters)');
  return a.trim();
}

/** The request's `options`, each defaulting to the registry's; 400 naming a bad one. */
export function checkOptionsFrom(body: unknown, defaults: CheckOptions, retention: number): CheckOptions {
  const o = (body as { options?: unknown } | null)?.options;
  const given = o === undefined || o === null ? {} : o;
  if (typeof given !== 'object' || Array.isArray(given)) throw badRequest('options must be an object');
  const { windowDays, thresholdPercent, excludeClients, ...rest } = given as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw badRequest(`options.${unknown} is not an option (windowDays, thresholdPercent, excludeClients)`);
  if (windowDays !== undefined && (!Number.isInteger(windowDays) || (windowDays as number) < 1 || (windowDays as number) > retention)) {
    throw badRequest(`options.windowDays must be a whole number of days from 1 to ${retention} (the usage kept)`);
  }
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
    windowDays: (windowDays as number | undefined) ?? defaults.windowDays,
    thresholdPercent: thresholdPercent ?? defaults.thresholdPercent,
    excludeClients: [...((excludeClients as string[] | undefined) ?? defaults.excludeClients)],
  };
}
