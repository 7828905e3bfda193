import { resolve } from 'node:path';
import type { z } from '../config/config';
import type { Logger } from '../logging/logger';
import { runService } from '../process/run';
import { preloadServiceLibraries } from '../process/lazy';
import type { DefinedService, ServiceDefinition } from './definition';
import { migrateOnly } from './migrate-only';
import type { PeerDefinitions } from './peers';
import { publishOnly, serviceContractOf } from './publish';
import {
  loadPublishConfig,
  loadServiceConfig,
  publishOnlyRequested,
  serviceShape,
  type Env,
  type KitConfig,
  type ServiceConfig,
} from './service-config';
import { startService } from './start';

/**
 * The one way a Halo service starts (docs/adding-a-service.md): what differs between services is
 * the definition; configuration (service-config.ts), the start sequence (start.ts), migrations
 * alone (migrate-only.ts) and the contract's publishing (publish.ts) are the kit's.
 */
export function defineService<
  X extends z.ZodRawShape = Record<never, never>,
  C extends KitConfig = ServiceConfig<X>,
  D = unknown,
  P extends PeerDefinitions = Record<never, never>,
>(def: ServiceDefinition<X, C, D, P>): DefinedService<C, D> {
  const loadConfigFor = (source: Env = process.env): C => {
    const config = loadServiceConfig(def.name, def.config, source);
    return def.refineConfig ? def.refineConfig(config, source) : (config as unknown as C);
  };
  const start: DefinedService<C, D>['start'] = (config, logger, opts) => startService(def, config, logger, opts);
  const migrate = (config: C, logger: Logger) => migrateOnly(def, config, logger);
  return {
    name: def.name,
    migrationsDir: resolve(def.root, 'migrations'),
    configShape: serviceShape(def.name, def.config),
    loadConfig: loadConfigFor,
    migrate,
    start,
    contract: (config, httpPort) => serviceContractOf(def, config, httpPort),
    main: () => {
      // The publish hook reads its own few settings: it is given no database, secret or peer. (A
      // flag that does not parse is reported, one line, by the full configuration below.)
      if (safely(publishOnlyRequested))
        return runService(
          def.name,
          () => loadPublishConfig(def.name),
          (config) => publishOnly(def.name, serviceContractOf(def, config), config),
        );
      // Every service serves HTTP, GraphQL and SQL: load those now, while the launcher may still be
      // starting the database (late-env.ts), rather than on first use after it.
      preloadServiceLibraries();
      return runService(
        def.name,
        () => loadConfigFor(),
        (config, logger) => (config.HALO_MIGRATE_ONLY ? migrate(config, logger) : start(config, logger)),
      );
    },
  };
}

/** A flag read before the configuration is: one that does not parse counts as off here. */
function safely(read: () => boolean): boolean {
  try {
    return read();
  } catch {
    return false;
  }
}
