import { runService } from '@halo/kit';
import { startCatalogService, SERVICE_NAME } from './app';
import { loadCatalogConfig } from './config';

void runService(SERVICE_NAME, () => loadCatalogConfig(), startCatalogService);
