import { Client, type Dispatcher } from 'undici';

/** The connection went away under a request: closed by the other side, reset, or broken while writing. */
export const CLOSED_UNDER_REQUEST: ReadonlySet<string> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** undici's timeouts: connecting, waiting for the answer head, silence within the answer body. */
export const TIMED_OUT: ReadonlySet<string> = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The timeouts of an upstream's connections (undici's names), the same for its pool and a new connection. */
export interface UpstreamTimeouts {
  connectTimeout?: number;
  headersTimeout: number;
  bodyTimeout: number;
}

/**
 * Sends one request on a connection of its own, closed once the answer is done: how a request is
 * sent again after its kept-alive connection closed under it. A pod draining in a rolling update
 * closes every kept-alive connection it has at once, so the pool's next idle one is likely closing
 * too (and a second failure would reach the client); a new connection reaches a pod that is ready
 * (the Service's endpoints no longer list the draining one) or fails to connect, which says so.
 */
export function sendOnNewConnection(
  origin: string,
  timeouts: UpstreamTimeouts,
  request: Dispatcher.DispatchOptions,
  handler: Dispatcher.DispatchHandler,
): void {
  const client = new Client(origin, { ...timeouts, pipelining: 1 });
  client.dispatch(request, handler);
  // Graceful: the request queued above is sent and answered first, then the connection closes.
  void client.close();
}
