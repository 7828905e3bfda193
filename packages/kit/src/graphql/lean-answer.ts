import type { ServerResponse } from 'node:http';
import type { ExecutionResult, GraphQLError, GraphQLFormattedError } from 'graphql';
import { toRestError } from '../errors/errors';
import { cacheControlHeader, type RequestCachePolicy } from './cache-control';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** How the service formats an error for its clients (the kit's `formatGraphQLError`), after Apollo's normalisation. */
export type FormatError = (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;

/**
 * An executed operation's answer, as Apollo Server writes it: errors normalised (enrichError) and
 * formatted, the status and headers they carry, `Cache-Control` from the request's hints
 * (`no-store` with any error), the JSON body with its length.
 */
export function writeLeanAnswer(
  res: ServerResponse,
  result: ExecutionResult,
  hints: RequestCachePolicy,
  includeStacktrace: boolean,
  formatError: FormatError,
): void {
  let status = 200;
  const headers = new Map<string, string>();
  let errors: GraphQLFormattedError[] | undefined;
  if (result.errors) {
    errors = result.errors.map((error) => {
      const enriched = enrichError(error, includeStacktrace, status, headers);
      status = enriched.status;
      return formatError(enriched.formatted, error);
    });
  }
  headers.set('cache-control', errors ? 'no-store' : cacheControlHeader(hints));
  headers.set('content-type', JSON_CONTENT_TYPE);
  const payload = `${JSON.stringify({ errors, data: result.data, extensions: result.extensions })}\n`;
  for (const [name, value] of headers) res.setHeader(name, value);
  res.statusCode = status;
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  res.end(payload);
}

/** The kit's REST error answer, as `errorHandler` sends it through express's `res.json`. */
export function sendRestError(res: ServerResponse, err: unknown): void {
  const { status, body } = toRestError(err);
  const payload = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  res.end(payload);
}

/**
 * Apollo's `normalizeAndFormatErrors` for one error: a GraphQLError (a thrown value wrapped), its
 * `extensions.code` defaulted to INTERNAL_SERVER_ERROR, `extensions.http` taken as the answer's
 * status and headers, the stack trace where Apollo adds it. The subgraphs' lean path and the
 * gateway's (gateway/src/graphql/lean.ts) both answer through it.
 */
export function enrichError(
  error: GraphQLError,
  includeStacktrace: boolean,
  status: number,
  headers: Map<string, string>,
): { formatted: GraphQLFormattedError; status: number } {
  const extensions: Record<string, unknown> = { ...error.extensions, code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR' };
  const http = extensions.http as { status?: unknown; headers?: unknown } | undefined;
  if (
    http !== undefined &&
    http !== null &&
    typeof http === 'object' &&
    (!('status' in http) || typeof http.status === 'number') &&
    (!('headers' in http) || http.headers instanceof Map)
  ) {
    if (typeof http.status === 'number' && http.status) status = http.status;
    if (http.headers instanceof Map) for (const [k, v] of http.headers as Map<string, string>) headers.set(k, v);
    delete extensions.http;
  }
  if (includeStacktrace) extensions.stacktrace = error.stack?.split('\n');
  return { formatted: { ...error.toJSON(), extensions }, status };
}
