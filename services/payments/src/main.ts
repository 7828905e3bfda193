// Tracing first: it patches http, gRPC, pg and ioredis as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('payments');

import { paymentsService } from './service';

void paymentsService.main();
