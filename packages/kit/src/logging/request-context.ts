import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';

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

const BOUND = Symbol('halo.requestContext');
type Bound = IncomingMessage & { [BOUND]?: RequestContext };

/**
 * The same context held by the request object itself, for an edge that must not turn on async
 * hooks: on Node 20 the first `runInRequest` makes every async resource and promise of the process
 * pay a hook, a cost measured at the gateway (ADR 0008). The gateway binds
 * the context to each request; what serves it reads it from there (the REST proxy from `req`,
 * GraphQL from its operation context), and its access-log line from `logRequest`.
 */
export function bindRequestContext(req: IncomingMessage, context: RequestContext): void {
  (req as Bound)[BOUND] = context;
}

/** The context bound to `req` by `bindRequestContext`, if any. */
export function requestContextOf(req: IncomingMessage): RequestContext | undefined {
  return (req as Bound)[BOUND];
}

/** The request id bound to `req` (what every log line about the request carries), if any. */
export function boundRequestId(req: IncomingMessage): string | undefined {
  return (req as Bound)[BOUND]?.requestId;
}
