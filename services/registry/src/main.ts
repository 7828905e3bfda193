// Tracing first: it patches http, gRPC and pg as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('registry');

import { registryService } from './service';

void registryService.main();
