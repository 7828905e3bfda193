import { ConfigError, env, loadConfig, SERVICES, serviceConfigShape } from '@halo/kit';

export const catalogConfigShape = {
  ...serviceConfigShape(SERVICES.catalog),
  /** Seeds the demo products; defaults to on only when HALO_ENV=development. */
  SEED_DEMO_DATA: env.flag(),
};

export type CatalogConfig = ReturnType<typeof loadCatalogConfig>;

export function loadCatalogConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(catalogConfigShape, source);
  if (config.SEED_DEMO_DATA && config.HALO_ENV === 'production') {
    throw new ConfigError('Invalid configuration: SEED_DEMO_DATA: demo data is never seeded when HALO_ENV=production');
  }
  return { ...config, SEED_DEMO_DATA: config.SEED_DEMO_DATA ?? config.HALO_ENV === 'development' };
}
