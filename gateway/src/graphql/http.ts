import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GraphQLError, GraphQLFormattedError } from 'graphql';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import { badRequest, INTERNAL_MESSAGE, isHaloError } from '@halo/kit/errors';
import { sendJson } from '@halo/kit/http';
import { type Logger, boundRequestId } from '@halo/kit/logging';
import { toTransportError, type CallerResolver } from '../auth';
import { hasBody, isEncoded, isJsonType, parseJson, readBody, sendBodyError } from '../http';
import type { RateLimits, RateLimitTicket } from '../ratelimit';
import { httpContextOf, type GraphQLContext } from './context';
import type { LeanAnswer, LeftToApollo } from './lean';
import { cacheControlFor } from './operation-policy';
import type { IdentifiedOperation, RegisteredOperations } from './registered';
import { getOperationRequest, getSubscriptionError, operationRequestError, type OperationRequest } from './request-checks';

/** Apollo's header on PERSISTED_QUERY_NOT_FOUND; every error here says `no-store` instead. */
const APOLLO_PQ_ERROR_CACHE_CONTROL = 'private, no-cache, must-revalidate';

/** What answering GraphQL over HTTP needs, made once per gateway. */
export interface HttpGraphQL {
  server: ApolloServer<GraphQLContext>;
  callers: CallerResolver;
  rateLimits: RateLimits | null;
  bodyLimit: number;
  maxBatch: number;
  logger: Logger;
  /** Who answered an HTTP operation (ADR 0016, 0019; ./lean.ts): the lean path, or Apollo Server and why. */
  leanAnswered: ((by: LeanAnswer | 'apollo', reason?: LeftToApollo['apollo']) => void) | undefined;
  /** Registered operations (PERSISTED_OPERATIONS audit or enforce), null when off. */
  registered: RegisteredOperations | null;
  /** The lean path: who answered, or why it left the request to Apollo Server; null when switched off (GRAPHQL_LEAN=false). */
  lean:
    | ((req: IncomingMessage, res: ServerResponse, body: unknown, limit: RateLimitTicket | undefined) => Promise<LeanAnswer | LeftToApollo>)
    | null;
}

/**
 * One operation (or batch) over HTTP, inside its request's context: the body read and checked
 * (413, 400, the batch cap) before Apollo sees it, the request turned into Apollo's
 * HTTPGraphQLRequest, its HTTPGraphQLResponse written back. A failure here is a 500.
 */
export function handleGraphQLRequest(http: HttpGraphQL, req: IncomingMessage, res: ServerResponse): void {
  execute(http, req, res).catch((err: unknown) => {
    http.logger.error({ err, requestId: boundRequestId(req) }, 'graphql request failed');
    if (!res.headersSent) sendJson(res, 500, { error: INTERNAL_MESSAGE });
    else res.destroy();
  });
}

async function execute(http: HttpGraphQL, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Counted first, so a refused flood costs no body parsing. Bad credentials count by address
  // here; the context below answers them 401 (the same promise: verified once).
  let limit: RateLimitTicket | undefined;
  if (http.rateLimits) {
    const caller = await http.callers.resolve(req).catch(() => null);
    const ticket = await http.rateLimits.admit(req, res, caller, 'graphql');
    if (ticket === null) return;
    limit = ticket;
  }
  let body: unknown;
  if (hasBody(req)) {
    try {
      // Same answer as the services' body parser gives (kit errorHandler).
      if (isEncoded(req)) throw badRequest('Unsupported content encoding');
      const raw = await readBody(req, http.bodyLimit);
      // Apollo answers 400 to a POST whose body is not JSON; it never needs to see the bytes.
      if (isJsonType(req.headers['content-type'])) body = parseJson(raw);
    } catch (err) {
      return sendBodyError(res, err, http.logger);
    }
    if (Array.isArray(body) && body.length > http.maxBatch)
      return sendJson(res, 400, { errors: [batchTooLarge(body.length, http.maxBatch)] });
  }
  const url = req.url ?? '';
  const q = url.indexOf('?');
  let search = q === -1 ? '' : url.slice(q);
  const refused = requestError(body, req.method === 'GET' ? search : '');
  if (refused) return sendJson(res, 400, { errors: [refused] });
  if (http.registered) {
    const resolved = resolveRegistered(http.registered, req, body, req.method === 'GET' ? search : '');
    if ('refused' in resolved) return sendJson(res, 400, { errors: [formatRefusal(resolved.refused)] });
    body = resolved.body;
    if (resolved.search !== undefined) search = resolved.search;
  }
  if (http.lean) {
    // The executor is chosen in one place (lean.ts `decide`); every refusal is Apollo Server's to word.
    const taken: LeanAnswer | LeftToApollo = req.method === 'POST' ? await http.lean(req, res, body, limit) : { apollo: 'method' };
    if (typeof taken === 'string') return http.leanAnswered?.(taken);
    http.leanAnswered?.('apollo', taken.apollo);
  }
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const { callers } = http;
  const response = await http.server.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: req.method ?? 'GET', headers, search, body },
    // Credentials are checked once per HTTP request (a batch shares them); a bad one is a 401.
    context: async () => {
      const caller = await callers.resolve(req).catch((err: unknown) => {
        throw isHaloError(err) ? toTransportError(err) : err;
      });
      return httpContextOf(req, caller, limit);
    },
  });
  for (const [key, value] of response.headers) res.setHeader(key, value);
  res.statusCode = response.status ?? 200;
  // Apollo's cache-control plugin answers operations (no-store on errors); what fails before it
  // (a bad token, a bad request) or refuses a persisted query must never be cached either.
  const cacheControl = response.headers.get('cache-control');
  res.setHeader('cache-control', cacheControlFor(res.statusCode, cacheControl === APOLLO_PQ_ERROR_CACHE_CONTROL ? null : cacheControl));
  if (response.body.kind === 'complete') {
    res.setHeader('content-length', Buffer.byteLength(response.body.string));
    res.end(response.body.string);
    return;
  }
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}

const batchTooLarge = (size: number, maxBatch: number) => ({
  message: `A batch of ${size} operations exceeds the limit of ${maxBatch}`,
  extensions: { code: 'BATCH_LIMIT_EXCEEDED', batchSize: size, maxBatch },
});

/**
 * The first request error of a POST body (one operation or a batch) or a GET's parameters, checked
 * before Apollo sees them (src/graphql/request-checks.ts).
 */
function requestError(body: unknown, getSearch: string): GraphQLFormattedError | null {
  if (Array.isArray(body)) {
    for (const op of body) {
      const error = isObject(op) ? operationRequestError(op) : null;
      if (error) return error;
    }
    return null;
  }
  if (isObject(body)) return operationRequestError(body);
  // Decoded as Apollo decodes it: a name may be percent-encoded (`%76ariables=`), so the raw text proves nothing.
  if (getSearch) {
    const op = getOperationRequest(getSearch);
    return operationRequestError(op) ?? getSubscriptionError(op);
  }
  return null;
}

const isObject = (value: unknown): value is OperationRequest => typeof value === 'object' && value !== null;

/**
 * Every operation of the request (one, a batch, a GET's parameters) resolved against the
 * registered operations (./registered.ts): sent by id, its text from the list; a refusal of any
 * refuses the request, before anything of it runs.
 */
function resolveRegistered(
  registered: RegisteredOperations,
  req: IncomingMessage,
  body: unknown,
  getSearch: string,
): { body: unknown; search?: string } | { refused: GraphQLError } {
  const client = registered.clientOf((name) => req.headers[name]);
  if (Array.isArray(body)) {
    const ops: unknown[] = [];
    for (const op of body) {
      if (!isObject(op)) {
        ops.push(op);
        continue;
      }
      const resolved = registered.resolve(op, client);
      if ('refused' in resolved) return resolved;
      ops.push(resolved.op);
    }
    return { body: ops };
  }
  if (isObject(body)) {
    const resolved = registered.resolve(body, client);
    return 'refused' in resolved ? resolved : { body: resolved.op };
  }
  if (!getSearch) return { body };
  const params = new URLSearchParams(getSearch);
  const op: IdentifiedOperation = { ...getOperationRequest(getSearch) };
  for (const name of ['documentId', 'doc_id'] as const) if (params.has(name)) op[name] = params.get(name);
  const resolved = registered.resolve(op, client);
  if ('refused' in resolved) return resolved;
  if (resolved.op === op) return { body };
  // Sent by id: the text from the list, the ids gone (what stays is as the client sent it).
  params.set('query', String(resolved.op.query));
  params.delete('documentId');
  params.delete('doc_id');
  if (resolved.op.extensions === undefined) params.delete('extensions');
  else params.set('extensions', JSON.stringify(resolved.op.extensions));
  return { body, search: `?${params.toString()}` };
}

/** A GraphQLError refused before Apollo: its formatted form, without the transport's status. */
function formatRefusal(error: GraphQLError): GraphQLFormattedError {
  const { http: _http, ...extensions } = error.extensions;
  return { message: error.message, extensions };
}
