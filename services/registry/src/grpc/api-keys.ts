import type { ServiceIdentity } from '@halo/kit/auth';
import { callPolicyFor, callUnary, clientChannelOptions, grpc } from '@halo/kit/grpc';
import type { Logger } from '@halo/kit/logging';
import type { GrpcClientMetrics } from '@halo/kit/metrics';
import { auth as pb } from '@halo/proto';

/**
 * auth's ApiKeyService, exactly as the gateway uses it: an `X-API-Key` traded for a short-lived
 * access token carrying the key's owner, role and scopes. The registry's own service token goes
 * with every call (auth lists the registry as a caller of ExchangeApiKey).
 */
export function apiKeyExchange(opts: {
  address: string;
  deadlineMs: number;
  identity: ServiceIdentity;
  config: { GRPC_RETRIES?: number; GRPC_BREAKER_THRESHOLD?: number; GRPC_BREAKER_HALF_OPEN_MS?: number };
  logger: Logger;
  metrics?: GrpcClientMetrics;
}): { exchange(apiKey: string): Promise<string>; close(): void } {
  let client: pb.ApiKeyServiceClient | undefined;
  const policy = callPolicyFor('auth', opts.config, opts.logger, opts.metrics);
  /* eslint-disable @typescript-eslint/unbound-method -- callUnary calls `client.method` on `client`
     (method.call) and reads its gRPC path for metrics: it is meant to go unbound. */
  return {
    async exchange(apiKey) {
      client ??= new pb.ApiKeyServiceClient(opts.address, grpc.credentials.createInsecure(), clientChannelOptions);
      const res = await callUnary(
        client,
        client.exchangeApiKey,
        { apiKey },
        {
          defaultDeadlineMs: opts.deadlineMs,
          auth: { identity: opts.identity, audience: 'auth' },
          policy,
          idempotent: true,
        },
      );
      return res.accessToken;
    },
    close: () => client?.close(),
  };
  /* eslint-enable @typescript-eslint/unbound-method */
}
