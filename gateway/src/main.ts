// Tracing first: it patches http, undici, gRPC and ioredis as they load (packages/kit/src/tracing/tracing.ts).
import { startTracing } from '@halo/kit/tracing';
startTracing('gateway');

import { runService } from '@halo/kit/process';
import { createGateway } from './app';
import { loadGatewayConfig } from './config';

// Config (a bad value prints one line and exits 1) → logger → gateway → start → signals.
void runService(
  'gateway',
  () => loadGatewayConfig(),
  async (config, logger) => {
    const gateway = createGateway(config, logger);
    try {
      await gateway.start();
    } catch (err) {
      // Release what did start (Apollo, pools) before runService reports the failure and exits.
      await gateway.stop().catch(() => undefined);
      throw err;
    }
    return gateway;
  },
);
