import type { IncomingMessage, ServerResponse } from 'node:http';
import { requestIdOf } from '@halo/kit/http';
import { bindRequestContext } from '@halo/kit/logging';

/**
 * The request id's whole life at the edge. It is settled once, from the client's `X-Request-Id`
 * when that looks like one (so ids trace across systems) or a new UUID, answered in
 * `X-Request-Id`, and bound to the request as the kit's request context: what serves the request
 * reads it from there (`requestContextOf(req)`: the REST proxy, the access log, the API-key
 * exchange) or from the GraphQL context value made from it (the subgraph fetches). Nothing takes it
 * as a parameter. Not `runInRequest`: on Node 20 `AsyncLocalStorage` hooks every promise of the
 * process, which costs the gateway measurably more CPU per request (docs/adr/0008-request-context.md).
 */
export function serveWithRequestId(
  req: IncomingMessage,
  res: ServerResponse,
  serve: (req: IncomingMessage, res: ServerResponse) => void,
): void {
  const requestId = requestIdOf(req);
  res.setHeader('X-Request-Id', requestId);
  bindRequestContext(req, { requestId });
  serve(req, res);
}
