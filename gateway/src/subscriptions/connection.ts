import type { IncomingMessage } from 'node:http';
import type { Client } from 'graphql-ws';
import type { GraphQLError } from 'graphql';
import type { Caller } from '@halo/kit/auth';
import { isHaloError } from '@halo/kit/errors';
import { bindRequestContext, saneRequestId, type Logger, type RequestContext } from '@halo/kit/logging';
import type { CallerResolver } from '../auth';
import { clientHeadersOf } from '../usage';
import { error, type Connection } from './context';

/** graphql-ws's close codes the gateway uses (the client does not retry 4401). */
export const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_TRY_AGAIN_LATER = 1013;
/** setTimeout's largest delay; a token living longer is re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What `connection_init` and the upgrade request tell about a socket. */
export interface ConnectionInit {
  params: Record<string, unknown>;
  request: IncomingMessage;
  socket: { close(code: number, reason: string): void };
}

/** Why a connection was refused: bad credentials, or credentials that cannot be checked now. */
export type Refusal = { refused: 'unauthorized' | 'unavailable'; message: string };

/**
 * The socket's caller, checked exactly as HTTP checks one, in the socket's own request context
 * (`X-Request-Id` from `connection_init` or the upgrade): null when it is refused, and the socket
 * is then closed (4401 for bad credentials, 1013 when they cannot be checked now).
 */
export async function openConnection(init: ConnectionInit, callers: CallerResolver, log: Logger): Promise<Connection | null> {
  const { socket } = init;
  const context: RequestContext = { requestId: saneRequestId(init.params['x-request-id'] ?? init.request.headers['x-request-id']) };
  const connection = await resolveConnection(init.params, init.request, context, callers);
  if ('refused' in connection) {
    const refused = connection.refused === 'unauthorized';
    log.info({ requestId: context.requestId, reason: connection.message }, 'websocket connection refused');
    socket.close(refused ? CLOSE_UNAUTHORIZED : CLOSE_TRY_AGAIN_LATER, refused ? 'Unauthorized' : 'Service unavailable');
    return null;
  }
  if (connection.caller && typeof (init.params.authorization ?? init.params.Authorization) === 'string') {
    closeWhenExpired(connection, () => socket.close(CLOSE_UNAUTHORIZED, 'Token expired'));
  }
  return connection;
}

/**
 * A client's connection: its credentials (`authorization` or `x-api-key` in `params`) checked
 * exactly as HTTP checks them, in `context`. WebSocket takes them from `connection_init`, SSE from
 * the request's headers.
 */
export async function resolveConnection(
  params: Record<string, unknown>,
  request: IncomingMessage,
  context: RequestContext,
  callers: CallerResolver,
): Promise<Connection | Refusal> {
  const authorization = params.authorization ?? params.Authorization;
  const apiKey = params['x-api-key'];
  const headers: Record<string, string> = {};
  if (typeof authorization === 'string') headers.authorization = authorization;
  if (typeof apiKey === 'string') headers['x-api-key'] = apiKey;
  const req = { headers } as IncomingMessage;
  bindRequestContext(req, context);
  let caller: Caller | null;
  try {
    caller = await callers.resolve(req);
  } catch (err) {
    const unauthorized = isHaloError(err) && err.httpStatus === 401;
    return { refused: unauthorized ? 'unauthorized' : 'unavailable', message: isHaloError(err) ? err.message : 'error' };
  }
  // Browsers cannot set headers on a WebSocket upgrade: such clients name themselves in `connection_init`.
  const client = clientHeadersOf((key) => params[key] ?? request.headers[key]);
  return { client, caller, authorization: req.headers.authorization, context, upstreams: new Map(), expiry: undefined };
}

/** A closing socket: its expiry and renewal timers and its upstream sockets go. */
export function closeConnection(connection: Connection): void {
  clearTimeout(connection.expiry);
  clearTimeout(connection.renewal);
  for (const client of connection.upstreams.values()) disposeUpstream(client);
  connection.upstreams.clear();
}

/**
 * Closes an upstream graphql-ws client, never throwing. Its `dispose()` awaits a connection attempt
 * still pending and rejects when that attempt is then refused (the subgraph is down or restarting):
 * nothing is left to close then, and the subscriptions on it have had their error already. Left
 * unhandled, that rejection would end the gateway for every client.
 */
export function disposeUpstream(client: Client): void {
  Promise.resolve()
    .then(() => client.dispose())
    .catch(() => undefined);
}

/** Ends an upstream subscription's iterator (graphql-ws sends `complete`), never throwing. */
export function endUpstream(events: AsyncIterator<unknown>): void {
  events.return?.().catch(() => undefined);
}

/**
 * Runs `expire` when the client's token expires, so a subscription never outlives its token. A
 * token the client sent lives as long as it does; an API key's exchanged token is not the
 * client's to refresh, so the caller passes only connections whose client sent a token.
 */
export function closeWhenExpired(connection: Connection, expire: () => void): void {
  const expires = expiryOf(connection.authorization);
  if (expires === null) return;
  const arm = () => {
    const wait = expires - Date.now();
    connection.expiry = setTimeout(
      () => {
        if (Date.now() < expires) return arm();
        expire();
      },
      Math.max(0, Math.min(wait, MAX_TIMER_MS)),
    );
    connection.expiry.unref();
  };
  arm();
}

/** The `exp` of a verified JWT (ms since the epoch), if it has one. */
export function expiryOf(authorization: string | undefined): number | null {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined;
  const payload = token?.split('.')[1];
  if (!payload) return null;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/** What an API key's connection needs to keep its credentials fresh (`keepApiKeyFresh`). */
export interface Renewal {
  /** The credentials as the client sent them (`x-api-key`), exchanged again each period. */
  params: Record<string, unknown>;
  request: IncomingMessage;
  callers: CallerResolver;
  /** How often the key is exchanged again; a revoked key's subscriptions end within one period. */
  periodMs: number;
  /** Every subscription of the connection ends with this error, then the socket or stream. */
  end: (error: GraphQLError) => void;
  /** The connection's token was renewed (shared upstreams may hand over to it now). */
  renewed: () => void;
  log: Logger;
}

/**
 * An API key's connection: auth exchanged the key for a short-lived token (minutes), which the
 * subgraphs check on their own sockets and end them with. Every `periodMs` the key is exchanged
 * again, as a request with it would be (auth answers for revocation, nothing is cached): the new
 * token replaces the old on the connection, for the upstreams opened from now on and the shared
 * ones' make-before-break handovers (./shared-upstream.ts). A key refused (revoked, expired) ends
 * every subscription with UNAUTHENTICATED; auth out of reach is tried again the next period, and
 * the subscriptions end with UNAUTHENTICATED when the token held expires unrenewed. Never silent.
 */
export function keepApiKeyFresh(connection: Connection, r: Renewal): void {
  const armExpiry = () => {
    clearTimeout(connection.expiry);
    closeWhenExpired(connection, () => r.end(error('Token expired', 'UNAUTHENTICATED')));
  };
  const renew = async () => {
    const fresh = await resolveConnection(r.params, r.request, connection.context, r.callers);
    if ('refused' in fresh) {
      r.log.info({ requestId: connection.context.requestId, reason: fresh.message }, 'api key refused on renewal');
      if (fresh.refused === 'unauthorized') return r.end(error(fresh.message, 'UNAUTHENTICATED'));
    } else {
      connection.authorization = fresh.authorization;
      connection.caller = fresh.caller;
      armExpiry();
      r.renewed();
    }
    schedule();
  };
  const schedule = () => {
    connection.renewal = setTimeout(() => void renew().catch((err: unknown) => r.log.error({ err }, 'api key renewal failed')), r.periodMs);
    connection.renewal.unref();
  };
  armExpiry();
  schedule();
}

/** Whether a connection's client sent an API key (its token is the gateway's to renew). */
export function usesApiKey(params: Record<string, unknown>): boolean {
  const authorization = params.authorization ?? params.Authorization;
  return typeof authorization !== 'string' && typeof params['x-api-key'] === 'string';
}
