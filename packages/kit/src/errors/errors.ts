import { status as GrpcStatus } from '@grpc/grpc-js';

/**
 * One error type per meaning, mapped once per transport. Domain code throws these; REST, GraphQL
 * and gRPC adapters translate them with the functions below and never invent their own mapping.
 */
export const ERROR_KINDS = {
  BAD_REQUEST: { http: 400, graphql: 'BAD_USER_INPUT', grpc: GrpcStatus.INVALID_ARGUMENT },
  UNAUTHENTICATED: { http: 401, graphql: 'UNAUTHENTICATED', grpc: GrpcStatus.UNAUTHENTICATED },
  FORBIDDEN: { http: 403, graphql: 'FORBIDDEN', grpc: GrpcStatus.PERMISSION_DENIED },
  NOT_FOUND: { http: 404, graphql: 'NOT_FOUND', grpc: GrpcStatus.NOT_FOUND },
  METHOD_NOT_ALLOWED: { http: 405, graphql: 'METHOD_NOT_ALLOWED', grpc: GrpcStatus.UNIMPLEMENTED },
  CONFLICT: { http: 409, graphql: 'CONFLICT', grpc: GrpcStatus.ALREADY_EXISTS },
  PAYLOAD_TOO_LARGE: { http: 413, graphql: 'PAYLOAD_TOO_LARGE', grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  UNPROCESSABLE: { http: 422, graphql: 'BAD_USER_INPUT', grpc: GrpcStatus.FAILED_PRECONDITION },
  TOO_MANY_REQUESTS: { http: 429, graphql: 'RATE_LIMITED', grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  /** A resumed stream asked for more history than one replay carries: read it in pages, then resume later. */
  REPLAY_TOO_LONG: { http: 409, graphql: 'REPLAY_TOO_LONG', grpc: GrpcStatus.FAILED_PRECONDITION },
  UNAVAILABLE: { http: 503, graphql: 'SERVICE_UNAVAILABLE', grpc: GrpcStatus.UNAVAILABLE },
  INTERNAL: { http: 500, graphql: 'INTERNAL_SERVER_ERROR', grpc: GrpcStatus.INTERNAL },
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

/** The message every client sees for an unexpected failure; details go to the logs only. */
export const INTERNAL_MESSAGE = 'Internal server error';

export class HaloError extends Error {
  override readonly name = 'HaloError';
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Extra members for the REST body / GraphQL extensions (e.g. `{ status: 'processing' }`). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
  }
  get httpStatus(): number {
    return ERROR_KINDS[this.kind].http;
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new HaloError('BAD_REQUEST', message, extra);
export const unauthenticated = (message: string) => new HaloError('UNAUTHENTICATED', message);
export const forbidden = (message = 'Forbidden') => new HaloError('FORBIDDEN', message);
export const notFound = (message = 'Not found') => new HaloError('NOT_FOUND', message);
export const conflict = (message: string, extra?: Record<string, unknown>) => new HaloError('CONFLICT', message, extra);
export const unavailable = (message = 'Service unavailable') => new HaloError('UNAVAILABLE', message);
export const replayTooLong = (message: string, extra?: Record<string, unknown>) => new HaloError('REPLAY_TOO_LONG', message, extra);

export const isHaloError = (err: unknown): err is HaloError => err instanceof HaloError;

/** The one not-found rule: a lookup that found nothing is 404 `Not found` in every transport. */
export function found<T>(value: T | null | undefined): T {
  if (value === null || value === undefined) throw notFound();
  return value;
}

/** REST: status + `{ error }` body. Unknown errors become a bare 500 with no detail. */
export function toRestError(err: unknown): { status: number; body: { error: string } & Record<string, unknown> } {
  if (isHaloError(err)) return { status: err.httpStatus, body: { error: err.message, ...err.extra } };
  return { status: 500, body: { error: INTERNAL_MESSAGE } };
}

/** gRPC: status code + details string. */
export function toGrpcError(err: unknown): { code: GrpcStatus; details: string } {
  if (isHaloError(err)) return { code: ERROR_KINDS[err.kind].grpc, details: err.message };
  return { code: GrpcStatus.INTERNAL, details: INTERNAL_MESSAGE };
}

const GRPC_TO_KIND = new Map<number, ErrorKind>([
  [GrpcStatus.INVALID_ARGUMENT, 'BAD_REQUEST'],
  [GrpcStatus.UNAUTHENTICATED, 'UNAUTHENTICATED'],
  [GrpcStatus.PERMISSION_DENIED, 'FORBIDDEN'],
  [GrpcStatus.NOT_FOUND, 'NOT_FOUND'],
  [GrpcStatus.ALREADY_EXISTS, 'CONFLICT'],
  [GrpcStatus.FAILED_PRECONDITION, 'UNPROCESSABLE'],
  [GrpcStatus.RESOURCE_EXHAUSTED, 'TOO_MANY_REQUESTS'],
  [GrpcStatus.UNAVAILABLE, 'UNAVAILABLE'],
  [GrpcStatus.DEADLINE_EXCEEDED, 'UNAVAILABLE'],
]);

/** The reverse mapping, for gRPC clients: a peer's status becomes the same HaloError here. */
export function fromGrpcError(err: { code?: number; details?: string }): HaloError {
  const kind = (err.code !== undefined && GRPC_TO_KIND.get(err.code)) || 'INTERNAL';
  if (kind === 'UNAVAILABLE') return unavailable('Upstream service unavailable');
  return new HaloError(kind, kind === 'INTERNAL' ? INTERNAL_MESSAGE : (err.details ?? kind));
}
