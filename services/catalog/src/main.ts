// Tracing first: it patches http, gRPC, pg and ioredis as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('catalog');

import { catalogService } from './service';

void catalogService.main();
