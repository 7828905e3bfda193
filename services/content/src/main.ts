// Tracing first: it patches http, gRPC, pg and ioredis as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('content');

import { contentService } from './service';

void contentService.main();
