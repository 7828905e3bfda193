import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What one request carries through every `await` without being handed down by hand: the edge sets
 * it (the HTTP middleware `requestContext`, the gRPC wrapper `unary`), the logger writes its id on
 * every line, and `callUnary` passes the id on to the next service as `x-request-id` metadata.
 *
 * The caller is deliberately not here: who is calling is an input to authorisation, a domain
 * rule, so domain methods take it as a parameter that a unit test can see and set.
 */
export interface RequestContext {
  readonly requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * Runs `fn(...args)` (and everything it awaits) as part of the request `context`. The arguments
 * are handed through, so an edge that serves many requests needs no closure per request.
 */
export function runInRequest<A extends unknown[], T>(context: RequestContext, fn: (...args: A) => T, ...args: A): T {
  return storage.run(context, fn, ...args);
}

/** The id of the request being served here, or undefined outside one (start-up, timers, the seed). */
export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;
