import { createApiKeyExchange, type ApiKeyExchange, type PeerChannel } from '@halo/kit/grpc';
import { auth as pb } from '@halo/proto';

/**
 * auth's ApiKeyService, through the kit's one exchange (the gateway's too), over the kit's channel
 * to auth (`peers` in service.ts): an `X-API-Key` traded for a short-lived access token carrying
 * the key's owner, role and scopes. The registry's own service token goes with every call (auth
 * lists the registry as a caller of ExchangeApiKey); retries and auth's breaker follow the
 * registry's `GRPC_*` settings and log to its logger. What a failure answers a client is the
 * caller's (rest/principal.ts, the Studio's sign-in).
 */
export function authApiKeys(channel: PeerChannel): ApiKeyExchange {
  return createApiKeyExchange({
    client: pb.ApiKeyServiceClient,
    address: channel.address,
    deadlineMs: channel.deadlineMs,
    identity: channel.identity,
    policy: channel.policy,
  });
}
