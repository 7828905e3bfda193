import { resolve } from 'node:path';
import type { ServiceName } from '../config/topology';
import { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import { openServiceDb } from './service';
import type { KitConfig } from './service-config';

/** HALO_MIGRATE_ONLY: the service's migrations with its own settings, then the connection closed. */
export async function migrateOnly(def: { name: ServiceName; root: string }, config: KitConfig, logger: Logger): Promise<void> {
  const lifecycle = new Lifecycle(logger);
  try {
    await openServiceDb(def.name, config, { logger, lifecycle, migrationsDir: resolve(def.root, 'migrations') });
    logger.info({ schema: config.DB_SCHEMA ?? def.name }, 'migrations applied (HALO_MIGRATE_ONLY): exiting');
  } finally {
    await lifecycle.shutdown(config.SHUTDOWN_TIMEOUT_MS);
  }
}
