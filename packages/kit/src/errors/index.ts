/** One error type per meaning (`HaloError`, `badRequest`, `notFound`, …) and its mapping to REST and gRPC. */
export {
  badRequest,
  conflict,
  ERROR_KINDS,
  type ErrorKind,
  forbidden,
  found,
  fromGrpcError,
  HaloError,
  INTERNAL_MESSAGE,
  isHaloError,
  notFound,
  replayTooLong,
  toGrpcError,
  toRestError,
  unauthenticated,
  unavailable,
} from './errors';
