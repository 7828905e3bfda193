import type { GrpcAccess } from '@halo/kit/auth';
import { unary, type GrpcServiceBinding } from '@halo/kit/grpc';
import type { Logger } from '@halo/kit/logging';
import { auth as pb } from '@halo/proto';
import type { ApiKeys } from '../../domain/api-keys';

/** Who may call which method (docs/service-identity.md); kit topology's GRPC_CALLS agrees (tested). */
export const API_KEY_SERVICE_ACCESS = {
  // The registry exchanges an admin's key (the subgraph CLI) exactly as the gateway does.
  ExchangeApiKey: ['gateway', 'registry'],
} as const satisfies GrpcAccess;

/** `halo.auth.v1.ApiKeyService`: the gateway (and the registry) trades an `X-API-Key` for a short-lived access token. */
export function apiKeyServiceBinding(apiKeys: ApiKeys, logger: Logger): GrpcServiceBinding {
  const implementation: pb.ApiKeyServiceServer = {
    exchangeApiKey: unary(logger, (req: pb.ExchangeApiKeyRequest) => apiKeys.exchange(req.apiKey)),
  };
  return {
    name: 'halo.auth.v1.ApiKeyService',
    definition: pb.ApiKeyServiceService,
    implementation,
    access: API_KEY_SERVICE_ACCESS,
  };
}
