// Tracing first: it patches http, gRPC, pg and ioredis as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('auth');

import { authService } from './service';

void authService.main();
