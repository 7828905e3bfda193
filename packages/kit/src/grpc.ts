import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, service as healthService } from 'grpc-health-check';
import { fromGrpcError, toGrpcError } from './errors';
import type { Logger } from './logger';
import { currentRequestId, runInRequest, type RequestContext } from './request-context';
import { saneRequestId } from './request-id';

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
}

export interface RunningGrpcServer {
  port: number;
  health: HealthImplementation;
  shutdown(timeoutMs: number): Promise<void>;
}

/** Starts a gRPC server with the standard grpc.health.v1 service next to the given services. */
export async function startGrpcServer(opts: {
  host?: string;
  port: number;
  services: GrpcServiceBinding[];
  logger: Logger;
}): Promise<RunningGrpcServer> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  const statusMap: Record<string, 'SERVING'> = { '': 'SERVING' };
  for (const svc of opts.services) {
    server.addService(svc.definition, svc.implementation);
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
}

/** A typed, promise-returning unary call with a deadline and the request id as metadata. */
export function callUnary<Req, Res>(
  client: grpc.Client,
  method: UnaryMethod<Req, Res>,
  request: Req,
  opts: CallOptions & { defaultDeadlineMs: number },
): Promise<Res> {
  const metadata = new grpc.Metadata();
  const requestId = opts.requestId ?? currentRequestId();
  if (requestId) metadata.set(REQUEST_ID_KEY, requestId);
  const deadline = new Date(Date.now() + (opts.deadlineMs ?? opts.defaultDeadlineMs));
  return new Promise((resolve, reject) => {
    method.call(client, request, metadata, { deadline }, (err, res) => (err ? reject(fromGrpcError(err)) : resolve(res)));
  });
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

export const HealthClient = grpc.makeGenericClientConstructor(
  healthService as grpc.ServiceDefinition,
  'grpc.health.v1.Health',
) as unknown as new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => HealthClient;

/** The serving status of `service` ('' = the whole server) at `client`, with the usual deadline. */
export function checkHealth(client: HealthClient, service: string, opts: CallOptions & { defaultDeadlineMs: number }): Promise<string> {
  return callUnary(client, client.Check, { service }, opts).then((r) => r.status);
}
