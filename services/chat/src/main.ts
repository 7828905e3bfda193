// Tracing first: it patches http, gRPC, pg and ioredis as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('chat');

import { chatService } from './service';

void chatService.main();
