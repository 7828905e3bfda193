/** HTTP plumbing: the express middleware and handlers, server guards, input refusals (NUL, repeated headers, JSON depth). */
export { errorHandler, healthCheck, jsonBody, notFoundHandler, NotReady, requestContext, requestIdOf, route, sendJson } from './http';
export { CONNECTIONS_CHECKING, guardHttpServer, type HttpTimeouts } from './http-server';
export { deeperThan, JSON_TOO_DEEP, MAX_JSON_DEPTH } from './json-depth';
export {
  BODY_MAY_HOLD_NUL,
  findNul,
  NUL_CHECK_DEPTH,
  nulError,
  nulMessage,
  rawJsonMayHoldNul,
  refuseNul,
  refuseNulArguments,
  refuseNulInput,
} from './nul';
export { refuseRepeatedHeaders, repeatedHeader, repeatedHeaderMessage } from './single-headers';
