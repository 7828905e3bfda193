import type { ServiceIdentity } from '@halo/kit/auth';
import { callPolicyFor, createApiKeyExchange, type ApiKeyExchange } from '@halo/kit/grpc';
import type { Logger } from '@halo/kit/logging';
import type { GrpcClientMetrics } from '@halo/kit/metrics';
import { auth as pb } from '@halo/proto';

/**
 * auth's ApiKeyService, through the kit's one exchange (the gateway's too): an `X-API-Key` traded
 * for a short-lived access token carrying the key's owner, role and scopes. The registry's own
 * service token goes with every call (auth lists the registry as a caller of ExchangeApiKey);
 * retries and auth's breaker follow the registry's `GRPC_*` settings and log to its logger. What a
 * failure answers a client is the caller's (rest/principal.ts, the Studio's sign-in).
 */
export function authApiKeys(opts: {
  address: string;
  deadlineMs: number;
  identity: ServiceIdentity;
  config: { GRPC_RETRIES?: number; GRPC_BREAKER_THRESHOLD?: number; GRPC_BREAKER_HALF_OPEN_MS?: number };
  logger: Logger;
  metrics?: GrpcClientMetrics;
}): ApiKeyExchange {
  return createApiKeyExchange({
    client: pb.ApiKeyServiceClient,
    address: opts.address,
    deadlineMs: opts.deadlineMs,
    identity: opts.identity,
    policy: callPolicyFor('auth', opts.config, opts.logger, opts.metrics),
  });
}
