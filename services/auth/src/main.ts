import { runService } from '@halo/kit';
import { startAuthService, SERVICE_NAME } from './app';
import { loadAuthConfig } from './config';

void runService(SERVICE_NAME, () => loadAuthConfig(), startAuthService);
