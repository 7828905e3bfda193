import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloGateway } from '@apollo/gateway';
import type { Caller } from '@halo/kit/auth';
import { CachePolicy, enrichError, leanRequest, type LeanRequest } from '@halo/kit/graphql';
import type { Logger } from '@halo/kit/logging';
import {
  getOperationAST,
  GraphQLError,
  OperationTypeNode,
  type DocumentNode,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { CallerResolver } from '../auth';
import type { ObservedOperation, OperationObserver } from '../observability';
import type { RateLimitTicket } from '../ratelimit';
import { httpContextOf, type GraphQLContext, type OperationRequestText } from './context';
import { executeDirect, type DirectPlans } from './direct';
import type { Documents } from './documents';
import { admitOperation } from './operation-steps';
import { cacheControlFor, commitOperation, type OperationPolicy } from './operation-policy';
import { acceptsIncremental, deferredQuery, type DeferPlan, type PartOperation } from './defer';
import { assemble, deliverIncrementally, writeMultipart, type IncrementalPayload } from './incremental';
import { ResponseCache } from './response-cache';

export interface LeanGraphQLOptions {
  gateway: ApolloGateway;
  policy: OperationPolicy;
  callers: CallerResolver;
  /** The cost spend (engine.ts `spendCost`): throws the GraphQLError that refuses. */
  spend: ((cost: number, context: GraphQLContext) => Promise<void>) | undefined;
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  observers: readonly OperationObserver[];
  /** The edge response cache (shared with Apollo Server's path), or null when off. */
  responseCache: ResponseCache | null;
  /** The logger Apollo Server hands the gateway's executor. */
  logger: Logger;
  /** The document step every path that parses its own documents shares (./documents.ts). */
  documents: Documents;
  /** Operations one subgraph answers whole (ADR 0019); unset: every operation runs the executor. */
  direct?: DirectPlans;
}

/**
 * Who answered an operation the lean path took: the executor, the subgraph's data as it came
 * (ADR 0019), or the edge response cache.
 */
export type LeanAnswer = 'lean' | 'direct' | 'cache';

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
  /**
   * The one decision of which executor answers a POST operation: the lean path through
   * @apollo/gateway's executor, one subgraph directly (ADR 0019), or Apollo Server, with the
   * reason (`halo_graphql_lean_requests_total{by="apollo",reason}`). Free of side effects.
   */
  const decide = async (req: IncomingMessage, body: unknown): Promise<Admitted | LeftToApollo> => {
    const request = leanRequest(body);
    if (!request) return { apollo: 'shape' };
    const accept = req.headers.accept;
    // Apollo Client's and the Router's incremental format: parts when the operation defers any.
    const incremental = acceptsIncremental(accept);
    const contentType = incremental ? jsonTypeOf(accept!) : contentTypeFor(accept);
    if (!contentType) return { apollo: 'accept' };
    const loaded = opts.policy.current();
    if (!loaded) return { apollo: 'starting' };
    const schema = loaded.apiSchema;
    const caller = await opts.callers.resolve(req).catch(() => undefined);
    if (caller === undefined) return { apollo: 'credentials' };
    // The steps every transport runs (./operation-steps.ts); Apollo Server words what they refuse.
    const admitted = admitOperation(opts.documents, opts.policy, schema, request, caller);
    if ('step' in admitted) return { apollo: admitted.step };
    const { document, operation } = admitted;
    if (admitted.introspects) return { apollo: 'introspection' };
    if (operation.operation === OperationTypeNode.SUBSCRIPTION) return { apollo: 'subscription' };
    // In parts, the budget pays for every operation that runs (the limits judged the one sent).
    const deferred =
      incremental && request.query.includes('@defer')
        ? deferredQuery(document, operation, admitted.variables, (d, o) => opts.policy.check(schema, d, o, admitted.variables, caller))
        : null;
    const defer = deferred?.plan ?? null;
    const spend = deferred?.spend ?? admitted.cost;
    const direct = defer ? undefined : opts.direct?.lookup(schema, operation);
    return {
      request,
      contentType,
      schema,
      document,
      queryHash: admitted.queryHash,
      operation,
      caller,
      cost: admitted.cost,
      spend,
      direct,
      defer,
    };
  };

  return async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    limit: RateLimitTicket | undefined,
  ): Promise<LeanAnswer | LeftToApollo> {
    const decided = await decide(req, body);
    if ('apollo' in decided) return decided;
    return answer(opts, req, res, decided, limit);
  };
}

/** What a socket or stream hands over of an operation it admitted (graphql-ws's execution arguments). */
export interface AdmittedOverSocket {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null | undefined;
  /** The estimated cost the admission let through (on the object the admission made; absent from the type graphql-ws knows). */
  cost?: number;
}

/** The operation as the admission left it: what was sent, and its deferred fragments (null: answered whole). */
export interface SocketOperation {
  request: OperationRequestText;
  defer: DeferPlan | null;
}

/**
 * A query with deferred fragments sent over a WebSocket or an event stream (admitted there: the
 * edge's checks ran on it as sent and the rate limits charged its parts): its payloads, one `next`
 * each; null when nothing in it is deferred (the pipeline answers it whole). Observed once, assembled.
 */
export function deferredOverSockets(opts: LeanGraphQLOptions) {
  return (
    args: AdmittedOverSocket,
    { request: sent, defer: plan }: SocketOperation,
    context: GraphQLContext,
  ): AsyncGenerator<IncrementalPayload> | null => {
    if (!plan) return null;
    const request: LeanRequest = { query: sent.query, operationName: sent.operationName, variables: sent.variables };
    const startedAt = process.hrtime.bigint();
    const policy = new CachePolicy();
    const payloads = deliverIncrementally(plan, (part) => executePart(opts, request, args.schema, part, context, policy));
    return observedOnce(payloads, (result) => {
      const observed: ObservedOperation = {
        schema: args.schema,
        document: args.document,
        operation: getOperationAST(args.document, args.operationName) ?? undefined,
        requestedName: sent.operationName,
        variables: sent.variables,
        cost: args.cost,
        result,
        crashed: false,
        startedAt,
        header: (name) => (context.client as Readonly<Record<string, string | undefined>> | undefined)?.[name],
      };
      for (const observer of opts.observers) observer(observed);
    });
  };
}

export type ExecuteDeferred = ReturnType<typeof deferredOverSockets>;

/** The payloads as they come, then the assembled answer told once (also when the client left early). */
async function* observedOnce(
  payloads: AsyncGenerator<IncrementalPayload>,
  observe: (result: FormattedExecutionResult) => void,
): AsyncGenerator<IncrementalPayload> {
  const seen: IncrementalPayload[] = [];
  try {
    for await (const payload of payloads) {
      seen.push(payload);
      yield payload;
    }
  } finally {
    observe(assemble(seen));
  }
}

/**
 * Why an HTTP operation is left to Apollo Server (which words every refusal itself): not one
 * plain operation object (a batch, APQ, an extra field), an unusual `Accept`, no supergraph yet, a
 * document that does not parse or validate, introspection, no operation to choose, a
 * subscription, bad credentials, variables that do not coerce, the edge's policy refusing it; or
 * not a POST (GET).
 */
export type LeftToApollo = {
  apollo:
    | 'method'
    | 'shape'
    | 'accept'
    | 'starting'
    | 'document'
    | 'introspection'
    | 'operation'
    | 'subscription'
    | 'credentials'
    | 'variables'
    | 'policy';
};

interface Admitted {
  request: LeanRequest;
  contentType: string;
  schema: GraphQLSchema;
  document: DocumentNode;
  queryHash: string;
  operation: OperationDefinitionNode;
  caller: Caller | null;
  cost: number;
  /** What its answer spends from the caller's cost budget: its cost, or in parts the sum of theirs. */
  spend: number;
  /** One subgraph answers it whole, as asked (ADR 0019). */
  direct: ReturnType<DirectPlans['lookup']> | undefined;
  /** Its deferred fragments, when the client takes parts (./defer.ts); null: answered whole. */
  defer: DeferPlan | null;
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
  const context = httpContextOf(req, caller, limit);
  const observeAnswer = (result: FormattedExecutionResult, crashed: boolean) => {
    const observed: ObservedOperation = {
      schema,
      document,
      operation,
      requestedName: request.operationName,
      variables: request.variables,
      cost: admitted.cost,
      result,
      crashed,
      startedAt,
      header: (name) => headerOf(req, name),
    };
    for (const observer of opts.observers) observer(observed);
  };
  const finish = (status: number, cacheControl: Earned, result: FormattedExecutionResult, crashed: boolean) => {
    observeAnswer(result, crashed);
    write(res, status, contentType, cacheControl, result);
  };
  const overallCachePolicy = new CachePolicy();
  try {
    await commitOperation(admitted.spend, context, overallCachePolicy, opts.spend);
  } catch (err) {
    // Apollo Server's answer to a didResolveOperation hook that throws.
    const { errors, status } = formatErrors([toGraphQLError(err)], opts.formatError);
    finish(status ?? 500, null, { errors }, false);
    return 'lean';
  }
  // In parts, never from or into the response cache (a part is not an answer); observed once, assembled.
  if (admitted.defer) {
    const parts = deliverIncrementally(admitted.defer, (part) =>
      executePart(opts, admitted.request, schema, part, context, overallCachePolicy),
    );
    await writeMultipart(
      res,
      observedOnce(parts, (result) => observeAnswer(result, false)),
    );
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
  let executed: Awaited<ReturnType<ApolloGateway['executor']>>;
  let by: LeanAnswer = 'lean';
  try {
    ({ executed, by } = await execute(opts, admitted, context, overallCachePolicy));
  } catch (err) {
    const { errors, status } = formatErrors([toGraphQLError(err)], opts.formatError);
    finish(status ?? 500, null, { errors }, true);
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
  finish(status ?? 200, cacheable, result, false);
  return by;
}

/** Runs the operation as Apollo Server would hand it to the gateway's executor, or answers it directly (ADR 0019). */
async function execute(
  opts: LeanGraphQLOptions,
  {
    request,
    schema,
    document,
    operation,
    queryHash,
    direct,
  }: Pick<Admitted, 'request' | 'schema' | 'document' | 'operation' | 'queryHash' | 'direct'>,
  context: GraphQLContext,
  overallCachePolicy: CachePolicy,
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

/**
 * One part of a deferred operation (./incremental.ts): its own document through the gateway's
 * executor, with the operation's context; its errors formatted as every answer's are, a failure
 * too (never its internal message).
 */
async function executePart(
  opts: LeanGraphQLOptions,
  sent: LeanRequest,
  schema: GraphQLSchema,
  part: PartOperation,
  context: GraphQLContext,
  overallCachePolicy: CachePolicy,
): Promise<FormattedExecutionResult> {
  const operation = part.document.definitions[0] as OperationDefinitionNode;
  const request = { ...sent, query: part.query };
  try {
    const { executed } = await execute(
      opts,
      { request, schema, document: part.document, operation, queryHash: part.queryHash, direct: undefined },
      context,
      overallCachePolicy,
    );
    if (!executed.errors) return { data: executed.data };
    return { errors: formatErrors(executed.errors, opts.formatError).errors, data: executed.data };
  } catch (err) {
    return { errors: formatErrors([toGraphQLError(err)], opts.formatError).errors, data: null };
  }
}

/** The JSON type an incremental client also takes, for an answer sent whole. */
function jsonTypeOf(accept: string): string {
  return accept.includes('application/graphql-response+json') ? GRAPHQL_RESPONSE_TYPE : JSON_TYPE;
}

/** The cache policy an answer earned, written as its Cache-Control by `cacheControlFor`. */
type Earned = Parameters<typeof cacheControlFor>[1];

/** Written as http.ts writes Apollo Server's answer (its body is `prettyJSONStringify`). */
function write(res: ServerResponse, status: number, contentType: string, cacheControl: Earned, result: FormattedExecutionResult): void {
  writeText(
    res,
    status,
    contentType,
    cacheControl,
    `${JSON.stringify({ errors: result.errors, data: result.data, extensions: result.extensions })}\n`,
  );
}

function writeText(res: ServerResponse, status: number, contentType: string, cacheControl: Earned, text: string, ageS?: number): void {
  res.statusCode = status;
  res.setHeader('content-type', contentType);
  res.setHeader('cache-control', cacheControlFor(status, cacheControl));
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

const toGraphQLError = (err: unknown): GraphQLError => {
  const error = err instanceof Error ? err : new GraphQLError(`Unexpected error value: ${String(err)}`);
  return error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error });
};

/**
 * Apollo Server's `normalizeAndFormatErrors` (stack traces off, as the gateway configures it): the
 * kit's normaliser (the subgraphs' lean path answers through it too), then the gateway's
 * `formatError`; one that throws answers an opaque INTERNAL_SERVER_ERROR, as Apollo's does.
 */
function formatErrors(
  errors: readonly GraphQLError[],
  formatError: LeanGraphQLOptions['formatError'],
): { errors: GraphQLFormattedError[]; status: number | undefined } {
  let status: number | undefined;
  const formatted = errors.map((error) => {
    try {
      const enriched = enrichError(error, false, 0, new Map());
      if (enriched.status) status = enriched.status;
      return formatError(enriched.formatted, error);
    } catch {
      return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
  });
  return { errors: formatted, status };
}
