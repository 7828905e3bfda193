import type { IncomingMessage, ServerResponse } from 'node:http';
import { requestIdOf, runInRequest } from '@halo/kit';

/**
 * The request id's whole life at the edge. It is settled once, from the client's `X-Request-Id`
 * when that looks like one (so ids trace across systems) or a new UUID, answered in
 * `X-Request-Id`, and kept in the kit's request context for everything the request runs: the
 * logger writes it on every line, the REST proxy and the subgraph fetches send it upstream
 * (`currentRequestId()`), gRPC calls put it in their metadata. Nothing takes it as a parameter.
 *
 * `serve` runs inside the context with the request and response as its arguments: one context
 * object per request, no closure.
 */
export function serveWithRequestId(req: IncomingMessage, res: ServerResponse, serve: (req: IncomingMessage, res: ServerResponse) => void): void {
  const requestId = requestIdOf(req);
  res.setHeader('X-Request-Id', requestId);
  runInRequest({ requestId }, serve, req, res);
}
