import { SDK_NAME, SDK_VERSION } from './version.js';

/** The headers that name a client to the gateway, which records usage per client name and version. */
export const CLIENT_NAME_HEADER = 'apollographql-client-name';
export const CLIENT_VERSION_HEADER = 'apollographql-client-version';

/**
 * The client name and version headers to send: `@halo/client` and this package's version by
 * default; the app's own `clientName` (then its `clientVersion`, none without one) otherwise. An
 * empty `clientName` sends neither header.
 */
export function clientInfoHeaders(clientName?: string, clientVersion?: string): Record<string, string> {
  const name = clientName ?? SDK_NAME;
  if (name === '') return {};
  const version = clientVersion ?? (clientName === undefined ? SDK_VERSION : undefined);
  return { [CLIENT_NAME_HEADER]: name, ...(version ? { [CLIENT_VERSION_HEADER]: version } : {}) };
}

/** `defaults` without the headers `given` names, in any case: what a caller sets itself wins. */
export function unlessGiven(defaults: Record<string, string>, given: Record<string, string> | undefined): Record<string, string> {
  if (!given) return defaults;
  const named = new Set(Object.keys(given).map((k) => k.toLowerCase()));
  return Object.fromEntries(Object.entries(defaults).filter(([k]) => !named.has(k)));
}
