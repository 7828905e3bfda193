import type { RestManifest } from '../rest/rest-manifest';
import { restPart, type RestPart } from '../rest/rest-openapi';
import { SERVICE_TOKEN_METADATA, type ServiceIdentity } from '../auth/service-identity';
import type { ServiceName } from '../config/topology';

/**
 * A service's contract (docs/registry.md): what its team releases and the registry composes —
 * its subgraph SDL with its routing URL, and its REST part. Built here, composed by
 * `@halo/contracts` (never in a running service: services do not carry @apollo/composition).
 */
export interface ServiceContract {
  service: ServiceName;
  /** The service's HTTP base; its subgraph is `<url>/graphql`. */
  url: string;
  /** The subgraph SDL, or null when the service has no subgraph. */
  sdl: string | null;
  /** Null when the service has no REST routes. */
  rest: RestPart | null;
}

/** The one way a contract is put together, from a running service's parts or from a checkout's files. */
export function serviceContract(opts: {
  service: ServiceName;
  url: string;
  sdl?: string | null | undefined;
  manifest?: RestManifest | undefined;
}): ServiceContract {
  return {
    service: opts.service,
    url: opts.url.replace(/\/+$/, ''),
    sdl: opts.sdl ?? null,
    rest: opts.manifest && opts.manifest.routes.length > 0 ? restPart(opts.manifest) : null,
  };
}

/** The registry's answer to a publish (201 new version, 200 unchanged). */
export interface PublishResult {
  status: number;
  body: { version?: number; composition?: number; unchanged?: boolean; error?: string; report?: unknown };
}

/** Why a publish did not go through: refused (an HTTP answer) or the registry unreachable. */
export class PublishError extends Error {
  constructor(
    message: string,
    readonly kind: 'refused' | 'unreachable',
    readonly status?: number,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'PublishError';
  }
}

/** The header that carries a service token over HTTP: the gRPC metadata key's name. */
export const SERVICE_TOKEN_HEADER = SERVICE_TOKEN_METADATA;

/** Which gateway is polling the registry (its pod name and pid), for the registry's `GET /v1/gateways`. */
export const GATEWAY_ID_HEADER = 'x-halo-gateway-id';

/**
 * Publishes `contract` to the registry as the service itself: its service token (`aud: registry`)
 * in `x-halo-service-token`. Resolves on 200/201; throws a PublishError otherwise.
 */
export async function publishContract(
  contract: ServiceContract,
  opts: { registryUrl: string; identity: ServiceIdentity; timeoutMs?: number; acknowledge?: string },
): Promise<PublishResult> {
  // The registry spends publish tokens: a retry must not reuse one (docs/registry.md).
  const token = await opts.identity.singleUseToken('registry');
  let res: Response;
  try {
    res = await fetch(`${opts.registryUrl.replace(/\/+$/, '')}/v1/publish`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [SERVICE_TOKEN_HEADER]: token },
      body: JSON.stringify({ contract, ...(opts.acknowledge ? { acknowledge: opts.acknowledge } : {}) }),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
  } catch (err) {
    throw new PublishError(
      `registry unreachable at ${opts.registryUrl}: ${(err as Error).cause ? String(((err as Error).cause as Error).message ?? (err as Error).cause) : (err as Error).message}`,
      'unreachable',
    );
  }
  const body = (await res.json().catch(() => ({}))) as PublishResult['body'];
  if (res.status === 200 || res.status === 201) return { status: res.status, body };
  throw new PublishError(`publish refused (${res.status}): ${body.error ?? res.statusText}`, 'refused', res.status, body);
}
