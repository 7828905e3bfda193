/**
 * HTTP at the edge, for every stage: the request id and its context, CORS, request bodies, the
 * forwarded headers, the keep-alive pools to upstreams.
 */
export { serveWithRequestId } from './request-id';
export {
  ClientGoneError,
  hasBody,
  isEncoded,
  isJsonType,
  lingerThenClose,
  parseJson,
  payloadTooLarge,
  readBody,
  sendBodyError,
} from './body';
export { clientAddress, clientOf, forwardedFor, parseTrustedProxies, type ClientOf, type TrustedProxies } from './forwarded';
export { CLOSED_UNDER_REQUEST, sendOnNewConnection, TIMED_OUT, type UpstreamTimeouts } from './upstream';
export { createCors, CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_S, ORIGIN_NOT_ALLOWED, type CorsStage } from './cors';
