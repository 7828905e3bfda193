import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, service as healthService } from 'grpc-health-check';
import { decodeJwt } from 'jose';
import { ConfigError } from '../config/config';
import { fromGrpcError, HaloError, isHaloError, toGrpcError } from '../errors/errors';
import type { CallPolicy } from './call-policy';
import type { Logger } from '../logging/logger';
import { refuseNul } from '../http/nul';
import type { ServiceMetrics } from '../metrics/metrics';
import { authorizeCaller, SERVICE_TOKEN_METADATA, type GrpcAccess, type ServiceIdentity } from '../auth/service-identity';
import { currentRequestId, runInRequest, type RequestContext } from '../logging/request-context';
import { saneRequestId } from '../logging/request-id';

export { grpc };

export const REQUEST_ID_KEY = 'x-request-id';

/** What a handler learns about the call besides its request message (it is also the request context). */
export interface GrpcCallContext extends RequestContext {
  metadata: grpc.Metadata;
  /** The server's logger; inside the call it writes the request id on every line by itself. */
  logger: Logger;
}

type UnaryHandler<Req, Res> = (request: Req, ctx: GrpcCallContext) => Promise<Res>;

/**
 * Adapts an async handler to grpc-js: reads the request id from metadata into the request context
 * (so logs and onward calls carry it), and maps thrown errors through the kit's single error table
 * (unknown errors become INTERNAL and are logged).
 */
export function unary<Req, Res>(logger: Logger, handler: UnaryHandler<Req, Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const ctx: GrpcCallContext = { requestId: saneRequestId(call.metadata.get(REQUEST_ID_KEY)[0]), metadata: call.metadata, logger };
    const fail = (err: unknown) => {
      const mapped = toGrpcError(err);
      if (mapped.code === grpc.status.INTERNAL) logger.error({ err }, 'gRPC handler failed');
      callback({ code: mapped.code, details: mapped.details, metadata: new grpc.Metadata() });
    };
    runInRequest(ctx, () => {
      try {
        // INVALID_ARGUMENT naming the field: PostgreSQL cannot store a NUL character (kit/src/http/nul.ts).
        refuseNul(call.request, 'request');
        handler(call.request, ctx).then((res) => callback(null, res), fail);
      } catch (err) {
        fail(err);
      }
    });
  };
}

export interface GrpcServiceBinding {
  /** Fully-qualified service name for the health map, e.g. `halo.content.v1.UserService`. */
  name: string;
  definition: grpc.ServiceDefinition;
  implementation: grpc.UntypedServiceImplementation;
  /**
   * Which services may call each method, by its proto name: `{ CreateUser: ['auth'] }`. Every
   * method of the definition must be listed (`[]` closes one); the server refuses to start
   * otherwise. docs/service-identity.md.
   */
  access: GrpcAccess;
}

/** Trailer metadata on a refusal by service identity, so the caller can tell it from the method's own 401/403. */
export const REFUSED_BY_IDENTITY = 'x-halo-refused';

/** A method's proto name from its path: `/halo.content.v1.UserService/GetUser` → `GetUser`. */
const methodName = (path: string) => path.slice(path.lastIndexOf('/') + 1);

type AnyHandler = (
  call: grpc.ServerUnaryCall<unknown, unknown> & { emit(event: 'error', err: unknown): boolean },
  callback?: grpc.sendUnaryData<unknown>,
) => void;

/**
 * Wraps every method of a binding: the call's service token is verified (UNAUTHENTICATED) and its
 * issuer checked against the method's access list (PERMISSION_DENIED) before the handler runs.
 * Refusals are logged with the method and the caller (or, for a bad token, the issuer it claims),
 * never with the token.
 */
function guardBinding(
  binding: GrpcServiceBinding,
  identity: ServiceIdentity,
  logger: Logger,
  metrics: ServiceMetrics | undefined,
): grpc.UntypedServiceImplementation {
  const guarded: grpc.UntypedServiceImplementation = {};
  const methods = Object.entries(binding.definition);
  const names = new Set(methods.map(([, def]) => methodName(def.path)));
  const missing = [...names].filter((m) => !(m in binding.access));
  const unknown = Object.keys(binding.access).filter((m) => !names.has(m));
  if (missing.length || unknown.length) {
    throw new ConfigError(
      `${binding.name}: its access table must list exactly its methods` +
        (missing.length ? `; missing: ${missing.join(', ')}` : '') +
        (unknown.length ? `; not methods: ${unknown.join(', ')}` : ''),
    );
  }
  for (const [key, def] of methods) {
    const method = methodName(def.path);
    const handler = (binding.implementation[key] ?? binding.implementation[def.originalName ?? '']) as AnyHandler | undefined;
    if (!handler) throw new ConfigError(`${binding.name}: no implementation for ${method}`);
    const fullName = `${binding.name}/${method}`;
    const wrapped: AnyHandler = (call, callback) => {
      const started = process.hrtime.bigint();
      const observe = (code: grpc.status) =>
        metrics?.grpcServed(fullName, grpc.status[code] ?? String(code), Number(process.hrtime.bigint() - started) / 1e9);
      if (metrics && callback) {
        const done = callback;
        callback = (err, value) => {
          observe(err ? ((err as { code?: grpc.status }).code ?? grpc.status.UNKNOWN) : grpc.status.OK);
          done(err, value);
        };
      }
      const token = call.metadata.get(SERVICE_TOKEN_METADATA)[0];
      identity
        .verify(typeof token === 'string' ? token : undefined)
        .then((caller) => {
          authorizeCaller(binding.access, method, caller);
          return caller;
        })
        .then(
          () => handler(call, callback),
          (err: unknown) => {
            const refusal = isHaloError(err) ? err : new HaloError('UNAUTHENTICATED', 'Invalid service token');
            logger.warn(
              {
                grpcMethod: `${binding.name}/${method}`,
                ...describeCaller(token),
                reason: refusal.message,
                requestId: saneRequestId(call.metadata.get(REQUEST_ID_KEY)[0]),
              },
              'gRPC call refused',
            );
            const trailer = new grpc.Metadata();
            trailer.set(REFUSED_BY_IDENTITY, 'service-identity');
            const status = { code: toGrpcError(refusal).code, details: refusal.message, metadata: trailer };
            if (callback) callback(status);
            else call.emit('error', status);
          },
        );
    };
    guarded[key] = wrapped as grpc.UntypedHandleCall;
  }
  return guarded;
}

/** Who a refused call says it is: `caller` when the token names an issuer (unverified), never the token. */
function describeCaller(token: unknown): { claimedCaller?: string } {
  if (typeof token !== 'string') return {};
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === 'string' ? { claimedCaller: iss.slice(0, 64) } : {};
  } catch {
    return {};
  }
}

export interface RunningGrpcServer {
  port: number;
  health: HealthImplementation;
  shutdown(timeoutMs: number): Promise<void>;
}

/**
 * Starts a gRPC server: the given services, each method behind service identity (its binding's
 * access table), and the standard grpc.health.v1 service, open to anyone so probes work.
 */
export async function startGrpcServer(opts: {
  /** Default 0.0.0.0; a service passes GRPC_HOST (default its HTTP_HOST). */
  host?: string;
  port: number;
  services: GrpcServiceBinding[];
  /** This service's identity: verifies callers' tokens (its SERVICE_TRUSTED_KEYS). */
  identity: ServiceIdentity;
  /** Times every call served (the service's `/metrics`). */
  metrics?: ServiceMetrics | undefined;
  logger: Logger;
}): Promise<RunningGrpcServer> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  const statusMap: Record<string, 'SERVING'> = { '': 'SERVING' };
  for (const svc of opts.services) {
    server.addService(svc.definition, guardBinding(svc, opts.identity, opts.logger, opts.metrics));
    statusMap[svc.name] = 'SERVING';
  }
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);
  const address = `${opts.host ?? '0.0.0.0'}:${opts.port}`;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  opts.logger.info({ port }, 'gRPC listening');
  return {
    port,
    health,
    async shutdown(timeoutMs) {
      for (const name of Object.keys(statusMap)) health.setStatus(name, 'NOT_SERVING');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, timeoutMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (err: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

export interface CallOptions {
  /** Sent as `x-request-id` metadata; defaults to the id of the request being served (request context). */
  requestId?: string | undefined;
  /** Every call has a deadline; this overrides the client's default. */
  deadlineMs?: number;
  /** Retries (reads only) and the peer's circuit breaker (src/call-policy.ts). */
  policy?: CallPolicy | undefined;
  /** Safe to send again (a read): the policy may retry it when the peer was unreachable. */
  idempotent?: boolean;
}

/** Who is calling whom: the caller's identity mints (and caches) a token for `audience`. */
export interface ServiceAuth {
  identity: ServiceIdentity;
  /** The called service's name. */
  audience: string;
}

/**
 * A typed, promise-returning unary call with a deadline, the request id as metadata and, with
 * `auth`, the caller's service token. A peer's status becomes the kit's HaloError; a refusal by
 * the peer's service identity is this deployment's misconfiguration (keys, access table), not the
 * end user's: it becomes INTERNAL, so it never reaches a client as their 401/403.
 */
export async function callUnary<Req, Res>(
  client: grpc.Client,
  method: UnaryMethod<Req, Res>,
  request: Req,
  opts: CallOptions & { defaultDeadlineMs: number; auth?: ServiceAuth | undefined },
): Promise<Res> {
  const metadata = new grpc.Metadata();
  const requestId = opts.requestId ?? currentRequestId();
  if (requestId) metadata.set(REQUEST_ID_KEY, requestId);
  if (opts.auth) metadata.set(SERVICE_TOKEN_METADATA, await opts.auth.identity.tokenFor(opts.auth.audience));
  // One deadline for the whole call, retries included.
  const deadline = new Date(Date.now() + (opts.deadlineMs ?? opts.defaultDeadlineMs));
  const attempt = () =>
    new Promise<Res>((resolve, reject) => {
      method.call(client, request, metadata, { deadline }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  try {
    return await (opts.policy ? opts.policy.run(attempt, opts.idempotent ?? false, methodLabel(method)) : attempt());
  } catch (err) {
    if (isHaloError(err)) throw err;
    const e = err as grpc.ServiceError;
    if (e.metadata?.get(REFUSED_BY_IDENTITY).length) {
      throw new IdentityRefused(opts.auth?.audience ?? 'the peer', e.details);
    }
    throw fromGrpcError(e);
  }
}

/**
 * A client method's name as servers label theirs (`halo.content.v1.UserService/GetUser`): grpc-js
 * puts the method's path on each function of a generated client.
 */
function methodLabel(method: unknown): string {
  const path = (method as { path?: unknown }).path;
  return typeof path === 'string' ? path.slice(1) : 'unknown';
}

/** Channel options shared by every client: keepalive so idle channels survive proxies. */
export const clientChannelOptions: grpc.ChannelOptions = {
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
};

/** A `grpc.health.v1.Health` client (probes, peers' readiness, tests), from grpc-health-check's definition. */
export interface HealthClient extends grpc.Client {
  Check(
    request: { service: string },
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: (err: grpc.ServiceError | null, res: { status: string }) => void,
  ): grpc.ClientUnaryCall;
  Watch(request: { service: string }): grpc.ClientReadableStream<{ status: string }>;
}

export const HealthClient = grpc.makeGenericClientConstructor(healthService, 'grpc.health.v1.Health') as unknown as new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
) => HealthClient;

/** The serving status of `service` ('' = the whole server) at `client`, with the usual deadline. */
export function checkHealth(client: HealthClient, service: string, opts: CallOptions & { defaultDeadlineMs: number }): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- callUnary calls it on `client` (method.call) and reads its gRPC path for metrics
  return callUnary(client, client.Check, { service }, opts).then((r) => r.status);
}

/**
 * Waits until the gRPC server at `address` reports `service` ('' = the whole server) SERVING on
 * the standard health service, for at most `timeoutMs`; resolves to whether it did. For a service
 * that needs a peer while it starts (auth's seed asks content): asking the peer itself before it
 * listens would fail calls and open the circuit breaker. Health checks go around the call policy.
 */
export async function waitForServing(address: string, opts: { service?: string; timeoutMs: number }): Promise<boolean> {
  // Reconnect quickly while the peer is starting (grpc-js waits 1 s and more between attempts by default).
  const client = new HealthClient(address, grpc.credentials.createInsecure(), {
    'grpc.initial_reconnect_backoff_ms': 50,
    'grpc.max_reconnect_backoff_ms': 250,
  });
  const until = Date.now() + opts.timeoutMs;
  try {
    while (Date.now() < until) {
      const connected = await new Promise<boolean>((resolve) => client.waitForReady(until, (err) => resolve(!err)));
      if (!connected) return false;
      const status = await new Promise<string | undefined>((resolve) => {
        client.Check({ service: opts.service ?? '' }, new grpc.Metadata(), { deadline: Math.min(until, Date.now() + 1_000) }, (err, res) =>
          resolve(err ? undefined : res.status),
        );
      });
      if (status === 'SERVING') return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  } finally {
    client.close();
  }
}

/**
 * The peer refused this process's service token (its SERVICE_TRUSTED_KEYS lacks this process's
 * key, or this caller may not call that method): a deployment's misconfiguration, not the
 * client's fault. An INTERNAL error (a 500) unless the caller answers it otherwise.
 */
export class IdentityRefused extends HaloError {
  constructor(
    readonly peer: string,
    readonly detail: string,
  ) {
    super('INTERNAL', `refused by ${peer}'s service identity: ${detail}`);
  }
}
