import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloGateway } from '@apollo/gateway';
import type { GraphQLRequestContextWillSendResponse } from '@apollo/server';
import { leanRequest, requestContextOf, type Caller, type LeanRequest, type Logger } from '@halo/kit';
import {
  BREAK,
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  parse,
  specifiedRules,
  validate,
  visit,
  type DocumentNode,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { getVariableValues } from 'graphql/execution/values';
import { LRUCache } from 'lru-cache';
import type { CallerResolver } from '../auth';
import type { RateLimitTicket } from '../ratelimit';
import type { GraphQLContext } from './context';
import { executeDirect, type DirectPlans } from './direct';
import type { OperationPolicy } from './operation-policy';
import { ResponseCache } from './response-cache';

/**
 * One operation answered, as the metrics and usage observe it: the same function is called by
 * their Apollo Server plugins and by the lean path (ADR 0016).
 */
export interface ObservedOperation {
  schema: GraphQLSchema;
  document: DocumentNode | undefined;
  operation: OperationDefinitionNode | undefined;
  /** The name the client sent (used when no operation was resolved). */
  requestedName: string | undefined;
  /** The answer as sent (errors formatted). */
  result: FormattedExecutionResult;
  /** Execution started and threw (a crash, not a refusal). */
  crashed: boolean;
  /** `process.hrtime.bigint()` when the request started. */
  startedAt: bigint;
  header: (name: string) => string | undefined;
}

export type OperationObserver = (observed: ObservedOperation) => void;

/** What Apollo Server's `willSendResponse` hook knows, as an observer reads it (both plugins call this). */
export function observedFromApollo(
  { schema, document, operation, request, response }: GraphQLRequestContextWillSendResponse<object>,
  crashed: boolean,
  startedAt: bigint,
): ObservedOperation {
  const body = response.body;
  return {
    schema,
    document,
    operation,
    requestedName: request.operationName,
    result: body.kind === 'single' ? body.singleResult : body.initialResult,
    crashed,
    startedAt,
    header: (name) => request.http?.headers.get(name),
  };
}

export interface LeanGraphQLOptions {
  gateway: ApolloGateway;
  policy: OperationPolicy;
  callers: CallerResolver;
  /** The cost spend (engine.ts `spendCost`): throws the GraphQLError that refuses. */
  spend: ((cost: number, context: GraphQLContext) => Promise<void>) | undefined;
  maxTokens: number;
  /** What Apollo Server is given as `validationRules` (alias cap, introspection rule). */
  validationRules: readonly ValidationRule[];
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  observers: readonly OperationObserver[];
  /** The edge response cache (shared with Apollo Server's path), or null when off. */
  responseCache: ResponseCache | null;
  /** The logger Apollo Server hands the gateway's executor. */
  logger: Logger;
  /** Documents kept parsed and validated, by query text (at most; the memory budget below also bounds them). */
  documents?: number;
  /** Operations one subgraph answers whole (ADR 0019); unset: every operation runs the executor. */
  direct?: DirectPlans;
}

/**
 * Who answered an operation the lean path took: the executor, the subgraph's data as it came
 * (ADR 0019), or the edge response cache.
 */
export type LeanAnswer = 'lean' | 'direct' | 'cache';

/**
 * What the documents kept parsed may hold, counted as 4 bytes per character of query text (the
 * text as the key, a string literal's copy in the tree, the tree itself: GRAPHQL_MAX_TOKENS bounds
 * its nodes, not a literal's length). A client sending many distinct large queries (a 1 MB body
 * can be one valid string literal) churns this budget, not the gateway's heap. One query text over
 * `LARGEST_KEPT` characters is parsed every time, never kept.
 */
export const DOCUMENT_BUDGET_BYTES = 8 * 1024 * 1024;
const LARGEST_KEPT = 64 * 1024;

/** The lean path's document cache: by query text, bounded in entries and in memory. */
export function documentCache<V extends object>(max = 1000): LRUCache<string, V> {
  return new LRUCache<string, V>({
    max,
    maxSize: DOCUMENT_BUDGET_BYTES,
    maxEntrySize: LARGEST_KEPT * 4,
    sizeCalculation: (_value, query) => Math.max(1, query.length * 4),
  });
}

/** A query text parsed and validated against one API schema; `null`: Apollo Server answers it. */
interface Prepared {
  schema: GraphQLSchema;
  ready: { document: DocumentNode; queryHash: string } | null;
}

type GatewayRequestContext = Parameters<ApolloGateway['executor']>[0];

const JSON_TYPE = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8';

/**
 * The lean path (ADR 0016): a plain POST `/graphql` operation answered by calling
 * @apollo/gateway's executor directly, without Apollo Server's per-request pipeline, with the same
 * bytes, status and headers Apollo Server gives (e2e/graphql-lean.test.ts compares the two).
 *
 * Returns false, having done nothing observable, when the request is not one it takes: Apollo
 * Server answers it then (not one plain operation object, an unusual `Accept`, a document that
 * does not parse or validate or introspects, an operation that cannot be chosen or is a
 * subscription, a bad token, variables that do not coerce, an operation the edge's policy
 * refuses). Every check before the cost spend is free of side effects, so Apollo Server runs them
 * again and words the refusal itself. An anonymous query may be answered from the edge response
 * cache, which both paths share.
 */
export function leanGraphQL(opts: LeanGraphQLOptions) {
  const documents = documentCache<Prepared>(opts.documents);
  const rules = [...specifiedRules, ...opts.validationRules];

  const prepare = (schema: GraphQLSchema, query: string): Prepared['ready'] => {
    const known = documents.get(query);
    if (known?.schema === schema) return known.ready;
    const ready = prepareDocument(schema, query, opts.maxTokens, rules);
    documents.set(query, { schema, ready });
    return ready;
  };

  /** The request as the lean path runs it, or null (Apollo Server answers). Free of side effects. */
  const admit = async (req: IncomingMessage, body: unknown): Promise<Admitted | null> => {
    const request = leanRequest(body);
    const contentType = request && contentTypeFor(req.headers.accept);
    const loaded = contentType && opts.policy.current();
    if (!request || !contentType || !loaded) return null;
    const schema = loaded.apiSchema;
    const ready = prepare(schema, request.query);
    const operation = ready && getOperationAST(ready.document, request.operationName);
    if (!ready || !operation || operation.operation === OperationTypeNode.SUBSCRIPTION) return null;
    const caller = await opts.callers.resolve(req).catch(() => undefined);
    if (caller === undefined) return null;
    if (operation.variableDefinitions?.length) {
      const coerced = getVariableValues(schema, operation.variableDefinitions, request.variables ?? {});
      if (coerced.errors) return null;
    }
    try {
      const cost = opts.policy.check(schema, ready.document, operation, request.variables, caller);
      return { request, contentType, schema, ...ready, operation, caller, cost };
    } catch {
      return null;
    }
  };

  return async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    limit: RateLimitTicket | undefined,
  ): Promise<LeanAnswer | false> {
    const admitted = await admit(req, body);
    if (!admitted) return false;
    return answer(opts, req, res, admitted, limit);
  };
}

interface Admitted {
  request: LeanRequest;
  contentType: string;
  schema: GraphQLSchema;
  document: DocumentNode;
  queryHash: string;
  operation: OperationDefinitionNode;
  caller: Caller | null;
  cost: number;
}

/** From the cost spend on, the answer is the lean path's own: spend, the response cache, execute, format, observe, write. */
async function answer(
  opts: LeanGraphQLOptions,
  req: IncomingMessage,
  res: ServerResponse,
  admitted: Admitted,
  limit: RateLimitTicket | undefined,
): Promise<LeanAnswer> {
  const { request, contentType, schema, document, operation, caller } = admitted;
  const startedAt = process.hrtime.bigint();
  const context: GraphQLContext = { authorization: req.headers.authorization, caller, requestId: requestContextOf(req)?.requestId, limit };
  const observeAnswer = (result: FormattedExecutionResult, crashed: boolean) => {
    const observed: ObservedOperation = {
      schema,
      document,
      operation,
      requestedName: request.operationName,
      result,
      crashed,
      startedAt,
      header: (name) => headerOf(req, name),
    };
    for (const observer of opts.observers) observer(observed);
  };
  const finish = (status: number, cacheControl: string, result: FormattedExecutionResult, crashed: boolean) => {
    observeAnswer(result, crashed);
    write(res, status, contentType, cacheControl, result);
  };
  const overallCachePolicy = new CachePolicy();
  try {
    if (opts.spend) await opts.spend(admitted.cost, context);
    if (caller) overallCachePolicy.restrict({ scope: 'PRIVATE' });
  } catch (err) {
    // Apollo Server's answer to a didResolveOperation hook that throws.
    const { errors, status } = formatErrors([toGraphQLError(err)], opts.formatError);
    finish(status ?? 500, 'no-store', { errors }, false);
    return 'lean';
  }
  // After the edge's checks and the spend, as on Apollo Server's path (its plugin's responseForOperation).
  const cache = opts.responseCache;
  const cacheKey =
    cache && ResponseCache.mayUse(operation.operation, context)
      ? cache.keyOf(schema, document, operation.name?.value ?? null, request.variables)
      : null;
  if (cacheKey !== null) {
    const hit = await cache!.lookup(cacheKey);
    if (hit) {
      observeAnswer(CACHED, false);
      writeText(res, 200, contentType, `max-age=${hit.maxAgeS - hit.ageS}, public`, `${hit.body}\n`, hit.ageS);
      return 'cache';
    }
  }
  const direct = opts.direct?.lookup(schema, operation);
  let executed: Awaited<ReturnType<ApolloGateway['executor']>>;
  let by: LeanAnswer = 'lean';
  try {
    ({ executed, by } = await execute(opts, admitted, context, overallCachePolicy, direct));
  } catch (err) {
    const { errors, status } = formatErrors([toGraphQLError(err)], opts.formatError);
    finish(status ?? 500, 'no-store', { errors }, true);
    return by;
  }
  let status: number | undefined;
  let errors: GraphQLFormattedError[] | undefined;
  if (executed.errors) ({ errors, status } = formatErrors(executed.errors, opts.formatError));
  // Apollo Server's status400ForVariableCoercionErrors.
  if (errors?.length && executed.data === undefined && !status) status = 400;
  // Apollo Server's `{ ...result, errors }`: no `data` key when nothing ran (the metrics tell a refusal by that).
  const result: FormattedExecutionResult = { ...executed, errors };
  const cacheable = errors ? null : overallCachePolicy.policyIfCacheable();
  if (cacheKey !== null) cache!.save(cacheKey, result, cacheable);
  finish(status ?? 200, cacheable ? `max-age=${cacheable.maxAge}, ${cacheable.scope.toLowerCase()}` : 'no-store', result, false);
  return by;
}

/** Runs the operation as Apollo Server would hand it to the gateway's executor, or answers it directly (ADR 0019). */
async function execute(
  opts: LeanGraphQLOptions,
  { request, schema, document, operation, queryHash }: Admitted,
  context: GraphQLContext,
  overallCachePolicy: CachePolicy,
  direct: ReturnType<DirectPlans['lookup']> | undefined,
): Promise<{ executed: Awaited<ReturnType<ApolloGateway['executor']>>; by: LeanAnswer }> {
  const requestContext = {
    request: { query: request.query, operationName: request.operationName, variables: request.variables },
    logger: opts.logger,
    schema,
    context,
    queryHash,
    document,
    source: request.query,
    operationName: operation.name?.value ?? null,
    operation,
    metrics: {},
    overallCachePolicy,
    requestIsBatched: false,
  } as unknown as GatewayRequestContext;
  if (direct) return executeDirect(direct, requestContext, opts.gateway.executor);
  return { executed: await opts.gateway.executor(requestContext), by: 'lean' };
}

/** Written as http.ts writes Apollo Server's answer (its body is `prettyJSONStringify`). */
function write(res: ServerResponse, status: number, contentType: string, cacheControl: string, result: FormattedExecutionResult): void {
  writeText(
    res,
    status,
    contentType,
    cacheControl,
    `${JSON.stringify({ errors: result.errors, data: result.data, extensions: result.extensions })}\n`,
  );
}

function writeText(res: ServerResponse, status: number, contentType: string, cacheControl: string, text: string, ageS?: number): void {
  res.statusCode = status;
  res.setHeader('content-type', contentType);
  res.setHeader('cache-control', status >= 400 ? 'no-store' : cacheControl);
  if (ageS !== undefined) res.setHeader('age', String(ageS));
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}

/**
 * What the observers (metrics, usage) are told of a response-cache hit: an answer with data and no
 * errors, which is all they read of it; the stored JSON is sent as it is, never parsed.
 */
const CACHED: FormattedExecutionResult = Object.freeze({ data: null });

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The content type Apollo Server's negotiation picks for the common `Accept` values; null for the
 * others (Apollo Server negotiates those itself).
 */
function contentTypeFor(accept: string | undefined): string | null {
  switch (accept) {
    case undefined:
    case '':
    case '*/*':
    case 'application/json':
      return JSON_TYPE;
    case 'application/graphql-response+json':
      return GRAPHQL_RESPONSE_TYPE;
    default:
      return null;
  }
}

/** Parsed and validated as Apollo Server does (same token cap, same rules); null when it must answer. */
function prepareDocument(
  schema: GraphQLSchema,
  query: string,
  maxTokens: number,
  rules: readonly ValidationRule[],
): { document: DocumentNode; queryHash: string } | null {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens });
  } catch {
    return null;
  }
  let introspects = false;
  visit(document, {
    Field(node) {
      if (node.name.value !== '__schema' && node.name.value !== '__type') return undefined;
      introspects = true;
      return BREAK;
    },
  });
  if (introspects) return null;
  if (validate(schema, document, rules).length > 0) return null;
  return { document, queryHash: createHash('sha256').update(query).digest('hex') };
}

const toGraphQLError = (err: unknown): GraphQLError => {
  const error = err instanceof Error ? err : new GraphQLError(`Unexpected error value: ${String(err)}`);
  return error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error });
};

/**
 * Apollo Server's `normalizeAndFormatErrors` (stack traces off, as the gateway configures it):
 * `extensions.code` defaulted to INTERNAL_SERVER_ERROR, `extensions.http` taken as the status,
 * then the same `formatError`.
 */
function formatErrors(
  errors: readonly GraphQLError[],
  formatError: LeanGraphQLOptions['formatError'],
): { errors: GraphQLFormattedError[]; status: number | undefined } {
  let status: number | undefined;
  const formatted = errors.map((error) => {
    try {
      const extensions: Record<string, unknown> = { ...error.extensions, code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR' };
      const http = extensions.http as { status?: unknown; headers?: unknown } | null | undefined;
      if (
        typeof http === 'object' &&
        http !== null &&
        (!('status' in http) || typeof http.status === 'number') &&
        (!('headers' in http) || http.headers instanceof Map)
      ) {
        if (typeof http.status === 'number' && http.status) status = http.status;
        delete extensions.http;
      }
      return formatError({ ...error.toJSON(), extensions }, error);
    } catch {
      return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
  });
  return { errors: formatted, status };
}

/** Apollo Server's `CachePolicy` (what RemoteGraphQLDataSource restricts by each subgraph's Cache-Control). */
class CachePolicy {
  maxAge: number | undefined = undefined;
  scope: 'PUBLIC' | 'PRIVATE' | undefined = undefined;

  restrict(hint: { maxAge?: number | undefined; scope?: 'PUBLIC' | 'PRIVATE' | undefined }): void {
    if (hint.maxAge !== undefined && (this.maxAge === undefined || hint.maxAge < this.maxAge)) this.maxAge = hint.maxAge;
    if (hint.scope !== undefined && this.scope !== 'PRIVATE') this.scope = hint.scope;
  }

  replace(hint: { maxAge?: number | undefined; scope?: 'PUBLIC' | 'PRIVATE' | undefined }): void {
    if (hint.maxAge !== undefined) this.maxAge = hint.maxAge;
    if (hint.scope !== undefined) this.scope = hint.scope;
  }

  policyIfCacheable(): { maxAge: number; scope: 'PUBLIC' | 'PRIVATE' } | null {
    if (this.maxAge === undefined || this.maxAge === 0) return null;
    return { maxAge: this.maxAge, scope: this.scope ?? 'PUBLIC' };
  }
}
