import type { SupergraphSdlHook } from '@apollo/gateway';
import type { Logger } from '@halo/kit/logging';
import type { Versioning } from '../rest';
import {
  acceptOpenApi,
  acceptRoutes,
  acceptSupergraph,
  fileCompositionId,
  parseRegistryComposition,
  type OpenApiBody,
  type RegistryComposition,
} from './composition';
import { watchComposedFile, watchComposedFileAsync, type WatchedFile } from './files';
import { startRegistryPoller, type RegistryConnection, type RegistryPoller, type RegistryStatus } from './registry';

export { COMPOSED_FILE_POLL_MS } from './files';
export { startRegistryPoller, type RegistryConnection, type RegistryPoller, type RegistryStatus } from './registry';
export { startOperationsFeed, type OperationsFeed } from './operations';

/**
 * Where what the gateway serves comes from (docs/registry.md "Gateway"): the supergraph, the REST
 * route table and the OpenAPI document. At start-up, always the committed composed files (fast,
 * and the registry may be away). Then:
 *
 * - without a registry: each file is watched and reloaded on its own, as before;
 * - with `REGISTRY_URL`: the registry's latest composition, polled with an ETag. The three parts
 *   are checked first and swapped together, in one turn of the event loop; a composition that
 *   does not load is refused and logged, and the last good one stays. The files are then only
 *   the boot composition (not watched: a file change would undo what the registry published).
 */
export interface SupergraphSourceOptions {
  supergraphPath: string;
  routesPath: string;
  openapiPath: string;
  registry?: RegistryConnection | undefined;
  /** `<SERVICE>_URL` values set explicitly: they win over the URL composed into the supergraph. */
  serviceUrlOverrides: Readonly<Record<string, string>>;
  /** Where a Halo service listens by default (no composed URL, no override). */
  defaultServiceUrls: Readonly<Record<string, string>>;
  /** Each new route table, as it is swapped in (the dispatcher keeps it in a local variable). */
  onRoutes?: (routes: Versioning) => void;
  logger: Logger;
}

export interface ServedComposition {
  /** The registry's composition number, or `file:<hash>` for the committed files. */
  composition: string;
  source: 'file' | 'registry';
  /** When it was swapped in (ms since the epoch). */
  since: number;
  /** The registry's side, null without one. */
  registry: RegistryStatus | null;
}

export interface SupergraphSource {
  /** @apollo/gateway's `supergraphSdl`: the first supergraph, then every accepted new one. */
  hook: SupergraphSdlHook;
  routes: () => Versioning;
  openapi: () => OpenApiBody;
  /** A subgraph's GraphQL URL (for @apollo/gateway's buildService), remembered for `subgraphUrls`. */
  subgraphUrl: (name: string, composedUrl: string | undefined) => string;
  /** Every subgraph's GraphQL URL as served now (subscriptions read it per upstream). */
  subgraphUrls: Readonly<Record<string, string>>;
  status: () => ServedComposition;
  /** Polls the registry once now (tests); a no-op without one. */
  pollNow(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One closure on purpose: the served composition, route table and OpenAPI document change
 * together (a file's new version, a registry composition applied whole) and every accessor of
 * the source reads them; the file watching and polling it starts are in ./files.ts, ./registry.ts.
 */
export function createSupergraphSource(opts: SupergraphSourceOptions): SupergraphSource {
  const { logger, registry } = opts;
  const watch = registry === undefined;
  let served: Omit<ServedComposition, 'registry'> = { composition: 'loading', source: 'file', since: Date.now() };
  let routes: Versioning;
  const setRoutes = (next: Versioning) => {
    routes = next;
    opts.onRoutes?.(next);
  };
  const routesFile = watchComposedFile<Versioning>({
    path: opts.routesPath,
    variable: 'ROUTES_PATH',
    what: 'route table',
    logger,
    watch,
    accept: acceptRoutes,
    onChange: (next) => setRoutes(next),
  });
  const openapiFile = watchComposedFile({
    path: opts.openapiPath,
    variable: 'OPENAPI_PATH',
    what: 'OpenAPI document',
    logger,
    watch,
    accept: acceptOpenApi,
    onChange: (next) => void (openapi = next),
  });
  routes = routesFile.current();
  let openapi = openapiFile.current();
  let supergraphFile: WatchedFile<string> | null = null;
  let poller: RegistryPoller | null = null;
  const subgraphUrls: Record<string, string> = {};

  const applyComposition = (update: (sdl: string) => void) => (c: RegistryComposition) => {
    if (String(c.composition) === served.composition) return;
    // Everything is checked before anything changes: a refusal leaves all three as they were.
    const nextRoutes = acceptRoutes(JSON.stringify(c.routes));
    // The same text as the committed gateway/openapi.json (what `npm run compose` writes).
    const nextOpenapi = acceptOpenApi(`${JSON.stringify(c.openapi, null, 2)}\n`);
    const sdl = acceptSupergraph(c.supergraph);
    // Synchronous: @apollo/gateway builds the new schema and planner, then swaps them in.
    update(sdl);
    setRoutes(nextRoutes);
    openapi = nextOpenapi;
    served = { composition: String(c.composition), source: 'registry', since: Date.now() };
    logger.info({ composition: c.composition, services: c.services }, 'composition served');
  };

  const hook: SupergraphSdlHook = async ({ update }) => {
    supergraphFile = await watchComposedFileAsync({
      path: opts.supergraphPath,
      variable: 'SUPERGRAPH_PATH',
      what: 'supergraph',
      logger,
      watch,
      accept: acceptSupergraph,
      onChange: (sdl) => {
        update(sdl);
        served = { composition: fileCompositionId(sdl), source: 'file', since: Date.now() };
      },
    });
    const first = supergraphFile.current();
    served = { composition: fileCompositionId(first), source: 'file', since: Date.now() };
    if (registry) {
      poller = compositionPoller(registry, logger, applyComposition(update));
    }
    return { supergraphSdl: first, cleanup: () => stopAll() };
  };

  const stopAll = async () => {
    await Promise.all([poller?.stop(), supergraphFile?.stop(), routesFile.stop(), openapiFile.stop()]);
  };

  return {
    hook,
    routes: () => routes,
    openapi: () => openapi,
    subgraphUrl: (name, composedUrl) => (subgraphUrls[name] = subgraphUrlOf(opts, name, composedUrl)),
    subgraphUrls,
    status: () => ({
      ...served,
      registry: poller?.status() ?? (registry ? { up: false, since: served.since, reason: 'not polled yet', reached: false } : null),
    }),
    pollNow: async () => poller?.pollNow(),
    stop: stopAll,
  };
}

/** `GET /v1/supergraph` polled (./registry.ts), each new composition applied whole. */
function compositionPoller(registry: RegistryConnection, logger: Logger, apply: (c: RegistryComposition) => void): RegistryPoller {
  return startRegistryPoller({
    ...registry,
    logger,
    path: '/v1/supergraph',
    what: 'composition',
    parse: parseRegistryComposition,
    etagOf: (c) => `"${c.hash}"`,
    describe: (c) => ({ composition: c.composition }),
    apply,
  });
}

/** An explicit `<SERVICE>_URL` wins over the URL the service published, so it moves REST and GraphQL together. */
function subgraphUrlOf(opts: SupergraphSourceOptions, name: string, composedUrl: string | undefined): string {
  if (Object.hasOwn(opts.serviceUrlOverrides, name)) return `${opts.serviceUrlOverrides[name]}/graphql`;
  return composedUrl ?? (Object.hasOwn(opts.defaultServiceUrls, name) ? `${opts.defaultServiceUrls[name]}/graphql` : '');
}
