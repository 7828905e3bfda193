/** The logger, the request context (request id) every line carries, the access log. */
export { type AccessLogTarget, logRequest, quietAccessLog } from './access-log';
export { createLogger, errorForLog, isoTime, LineBuffer, type LoggedError, type Logger } from './logger';
export {
  bindRequestContext,
  boundRequestId,
  currentRequestId,
  type RequestContext,
  requestContextOf,
  runInRequest,
} from './request-context';
export { REQUEST_ID_HEADER, saneRequestId } from './request-id';
