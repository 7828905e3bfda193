import type { CallPolicy } from './call-policy';
import { callUnary, clientChannelOptions, grpc } from './grpc';
import type { ServiceIdentity } from '../auth/service-identity';

/**
 * An `X-API-Key` traded with auth's ApiKeyService (`ExchangeApiKey`) for the short-lived access
 * token auth issues for it: the key's owner, role and scopes, verified like any Bearer token
 * (`callerFromHeader`). The one way a process does it — the gateway at the edge, the registry for
 * the keys its CLIs and Studio send — so both send the same call: auth's generated client made on
 * first use, the caller's service token (`aud: auth`; auth lists who may exchange), one deadline
 * for the whole call, and retries while auth cannot be reached (an exchange changes nothing: it
 * is safe to repeat) under auth's circuit breaker.
 *
 * What differs between callers is theirs to give: the policy (the gateway's defaults, the
 * registry's `GRPC_*` settings and logger), the request id (the gateway binds it to the request,
 * a service has it in its request context), and the words of a failure. An exchange rejects with
 * auth's answer as the kit maps it — 401 `Invalid API key` for an unknown or revoked key — with
 * `IdentityRefused` when auth refuses this process's token, and with 503 when auth is away or its
 * breaker is open; each caller answers its own clients from these.
 */

/** What the kit calls of auth's generated client (`auth.ApiKeyServiceClient` of @halo/proto). */
export interface ApiKeyServiceClient extends grpc.Client {
  exchangeApiKey(
    request: { apiKey: string },
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: (err: grpc.ServiceError | null, response: { accessToken: string }) => void,
  ): grpc.ClientUnaryCall;
}

export interface ApiKeyExchangeOptions {
  /** auth's generated client class (`auth.ApiKeyServiceClient`): the kit loads no generated code of its own. */
  client: new (address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>) => ApiKeyServiceClient;
  /** auth's gRPC address (`AUTH_GRPC_ADDR`). */
  address: string;
  /** The deadline of one exchange, retries included (`GRPC_DEADLINE_MS`). */
  deadlineMs: number;
  /** The calling process's identity: its service token goes with every call. */
  identity: ServiceIdentity;
  /**
   * Retries and auth's circuit breaker, as the caller sets them up and measures them
   * (grpc/call-policy.ts); a service's `PeerChannel` to auth carries its own.
   */
  policy: CallPolicy | undefined;
}

export interface ApiKeyExchange {
  /**
   * The access token auth issues for `apiKey` (surrounding blanks ignored). `requestId` goes with
   * the call as metadata; without it, the request context's (callUnary).
   */
  exchange(apiKey: string, opts?: { requestId?: string | undefined }): Promise<string>;
  /** Closes the channel, if one was opened. */
  close(): void;
}

export function createApiKeyExchange(opts: ApiKeyExchangeOptions): ApiKeyExchange {
  let client: ApiKeyServiceClient | undefined;
  const call = {
    defaultDeadlineMs: opts.deadlineMs,
    auth: { identity: opts.identity, audience: 'auth' },
    policy: opts.policy,
    idempotent: true,
  };
  return {
    async exchange(apiKey, { requestId } = {}) {
      const c = (client ??= new opts.client(opts.address, grpc.credentials.createInsecure(), clientChannelOptions));
      // eslint-disable-next-line @typescript-eslint/unbound-method -- callUnary calls it on `c` (method.call) and reads its gRPC path for metrics
      const res = await callUnary(c, c.exchangeApiKey, { apiKey: apiKey.trim() }, { ...call, requestId });
      return res.accessToken;
    },
    close: () => client?.close(),
  };
}
