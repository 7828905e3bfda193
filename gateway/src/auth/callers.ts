import type { IncomingMessage } from 'node:http';
import { callerFromHeader, type Caller, type ServiceIdentity } from '@halo/kit/auth';
import { CallPolicy, createApiKeyExchange, DEFAULT_CALL_POLICY } from '@halo/kit/grpc';
import { boundRequestId } from '@halo/kit/logging';
import type { GrpcClientMetrics } from '@halo/kit/metrics';
import { auth } from '@halo/proto';

/**
 * Authentication at the edge. The gateway verifies a caller once, before anything is proxied or
 * planned (services verify again with the kit): a Bearer token with the shared HS256 secret, or an
 * `X-API-Key`, which auth exchanges for a short-lived token carrying the key's scopes — so every
 * service sees one kind of credential. REST routes marked `auth` and GraphQL operations touching
 * an `@authenticated` field of the supergraph need a caller (401 otherwise).
 */
export interface CallerResolver {
  /**
   * The caller of a request: null when it carries no credentials, a Caller when they verify,
   * and a 401 HaloError (`Invalid token`, `Invalid API key`) when they do not. An API key is
   * replaced, on the request itself, by the token auth issued for it. The exchange carries the
   * request id of the request context it runs in. Asked again for the same request (the rate
   * limits, then the stage), it answers the same promise: credentials are checked once per request.
   */
  resolve(req: IncomingMessage): Promise<Caller | null>;
  close(): void;
}

export function createCallerResolver(opts: {
  /** The gateway's service identity: its token goes with every call to auth. */
  identity: ServiceIdentity;
  jwtSecret: string | undefined;
  authGrpcAddr: string;
  deadlineMs: number;
  /** The gateway's metrics of its gRPC calls (src/observability/metrics.ts). */
  metrics?: GrpcClientMetrics | undefined;
}): CallerResolver {
  const apiKeys = createApiKeyExchange({
    client: auth.ApiKeyServiceClient,
    address: opts.authGrpcAddr,
    deadlineMs: opts.deadlineMs,
    identity: opts.identity,
    // auth's breaker makes API-key calls fail fast while auth is down; the gateway's settings are the defaults.
    policy: new CallPolicy('auth', DEFAULT_CALL_POLICY, undefined, opts.metrics),
  });
  const resolved = new WeakMap<IncomingMessage, Promise<Caller | null>>();
  const resolveOnce = async (req: IncomingMessage): Promise<Caller | null> => {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey === 'string' && apiKey.trim() !== '') {
      // The gateway binds the request id to the request (no async context at the edge).
      const accessToken = await apiKeys.exchange(apiKey, { requestId: boundRequestId(req) });
      delete req.headers['x-api-key'];
      req.headers.authorization = `Bearer ${accessToken}`;
    }
    return callerFromHeader(req.headers.authorization, opts.jwtSecret);
  };
  return {
    resolve(req) {
      let caller = resolved.get(req);
      if (caller === undefined) resolved.set(req, (caller = resolveOnce(req)));
      return caller;
    },
    close() {
      apiKeys.close();
    },
  };
}
