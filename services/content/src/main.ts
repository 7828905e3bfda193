import { runService } from '@halo/kit';
import { startContentService, SERVICE_NAME } from './app';
import { loadContentConfig } from './config';

void runService(SERVICE_NAME, () => loadContentConfig(), startContentService);
