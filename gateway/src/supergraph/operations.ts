import type { Logger } from '@halo/kit/logging';
import { parseActiveOperations, type RegisteredOperations } from '../graphql';
import { startRegistryPoller, type RegistryConnection, type RegistryPoller, type RegistryStatus } from './registry';

/** The registry's operation lists as the gateway polls them (null status: no registry, the file only). */
export interface OperationsFeed {
  status: () => RegistryStatus | null;
  /** One poll now (tests; the loop polls by itself). */
  pollNow: () => Promise<void>;
  stop: () => Promise<void>;
}

/**
 * `GET /v1/operations/active` polled like the supergraph (ETag, one poll at a time, the last good
 * lists kept while the registry is away), each answer swapped into `registered` whole.
 */
export function startOperationsFeed(
  registered: RegisteredOperations | null,
  registry: RegistryConnection | undefined,
  logger: Logger,
): OperationsFeed {
  if (!registered || !registry) return { status: () => null, pollNow: () => Promise.resolve(), stop: () => Promise.resolve() };
  const poller: RegistryPoller = startRegistryPoller({
    ...registry,
    logger,
    path: '/v1/operations/active',
    what: 'operation lists',
    parse: parseActiveOperations,
    apply: (operations) => registered.replace(operations),
  });
  return { status: () => poller.status(), pollNow: () => poller.pollNow(), stop: () => poller.stop() };
}
