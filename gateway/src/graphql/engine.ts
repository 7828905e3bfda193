import type { IncomingMessage, ServerResponse } from 'node:http';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { GraphQLError, type FormattedExecutionResult, type GraphQLFormattedError, type ValidationContext, type ValidationRule } from 'graphql';
import {
  ApolloGateway,
  RemoteGraphQLDataSource,
  type GraphQLDataSourceProcessOptions,
  type SupergraphSdlHook,
} from '@apollo/gateway';
import { ApolloServer, HeaderMap, type ApolloServerPlugin, type PersistedQueryOptions } from '@apollo/server';
import {
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import {
  badRequest,
  INTERNAL_MESSAGE,
  isHaloError,
  type Caller,
  sendJson,
  toGraphQLError,
  unavailable,
  type Logger,
} from '@halo/kit';
import { toTransportError, type CallerResolver } from '../auth/callers';
import { hasBody, isEncoded, isJsonType, parseJson, readBody, sendBodyError } from '../http/body';
import { dedupingFetcher } from './dedupe';
import { createHttpFetcher } from './http-fetcher';
import { OperationPolicy } from './operation-policy';
import { RedisResponseTier, responseCachePlugin, ResponseCacheStore } from './response-cache';
import { trustedDocumentsCache, trustedDocumentsPlugin, type TrustedDocuments } from './persisted';
import { getOperationRequest, operationChoicePlugin, operationRequestError, type OperationRequest } from './request-checks';

/** What every resolver and subgraph request sees: who asked and which request this is. */
export interface GraphQLContext {
  requestId: string;
  /** Forwarded to subgraphs as is (for an API key: the token auth exchanged it for). */
  authorization?: string | undefined;
  caller: Caller | null;
}

/** The limits every operation is held to (README "GraphQL at the edge"). */
export interface GraphQLLimits {
  maxDepth: number;
  maxCost: number;
  defaultListSize: number;
  maxAliases: number;
  maxTokens: number;
  maxBatch: number;
}

export interface GraphQLOptions {
  callers: CallerResolver;
  /** Where the supergraph comes from, and its updates (src/supergraph). */
  supergraph: SupergraphSdlHook;
  /** A subgraph's GraphQL URL from its name and the URL composed into the supergraph. */
  subgraphUrl: (name: string, composedUrl: string | undefined) => string;
  bodyLimit: number;
  logger: Logger;
  limits: GraphQLLimits;
  /** Off: `__schema` and `__type` are refused with 400 `INTROSPECTION_DISABLED` (GRAPHQL_INTROSPECTION). */
  introspection?: boolean;
  persistedQueries: {
    /** Where APQ registrations live (Redis); default: in this process. */
    cache?: NonNullable<PersistedQueryOptions['cache']>;
    ttlSeconds: number;
    /** Trusted documents mode: only these operations run. */
    trusted?: TrustedDocuments;
  };
  queryPlanCacheMiB: number;
  /**
   * Identical subgraph fetches of read-only operations share one request while it is in flight
   * (`GRAPHQL_DEDUPE_INFLIGHT`, default on).
   */
  dedupeInflight?: boolean;
  /**
   * Memory for the edge response cache of anonymous public queries, in MiB
   * (`GRAPHQL_RESPONSE_CACHE_MIB`); 0 or unset: no cache.
   */
  responseCacheMiB?: number;
  /** The response cache's tier shared by every replica (Redis); default: this process only. */
  sharedResponseCache?: RedisResponseTier;
  /** More Apollo Server plugins, first in line (the gateway's metrics: src/metrics.ts). */
  plugins?: ApolloServerPlugin<GraphQLContext>[];
}

const NO_STORE = 'no-store';
/** Apollo's header on PERSISTED_QUERY_NOT_FOUND; every error here says `no-store` instead. */
const APOLLO_PQ_ERROR_CACHE_CONTROL = 'private, no-cache, must-revalidate';

/**
 * The alias cap: GraphQL Armor's max-aliases rule, reporting (not throwing, which Apollo would
 * answer with a 500) an error whose code the gateway's formatError restores (Apollo renames
 * every validation error GRAPHQL_VALIDATION_FAILED).
 */
function aliasLimitRule(maxAliases: number): ValidationRule {
  return maxAliasesRule({
    n: maxAliases,
    propagateOnRejection: false,
    onReject: [
      (ctx: ValidationContext | null, err: GraphQLError) => {
        ctx?.reportError(
          new GraphQLError(err.message.replace(/^Syntax Error: /, ''), { extensions: { code: 'MAX_ALIASES_LIMIT', maxAliases } }),
        );
      },
    ],
  });
}

export const INTROSPECTION_DISABLED = 'INTROSPECTION_DISABLED';

/**
 * Introspection switched off (production's default): the gateway's own rule rather than Apollo's
 * `introspection: false`, so the answer has a code of its own and WebSocket operations get the
 * same rule. `__typename` stays allowed: clients need it.
 */
const noIntrospectionRule: ValidationRule = (ctx) => ({
  Field(node) {
    if (node.name.value !== '__schema' && node.name.value !== '__type') return;
    ctx.reportError(
      new GraphQLError('GraphQL introspection is disabled on this server (GRAPHQL_INTROSPECTION)', {
        nodes: node,
        extensions: { code: INTROSPECTION_DISABLED },
      }),
    );
  },
});

/** Limit errors raised as validation errors keep their own code (see aliasLimitRule). */
const VALIDATION_CODES_KEPT = new Set(['MAX_ALIASES_LIMIT', INTROSPECTION_DISABLED]);

/**
 * node:http with a keep-alive pool per subgraph (src/http-fetcher.ts): Apollo's default fetcher
 * costs about 1.5× the CPU of Node's global fetch (STACK-NOTES.md), and the global fetch's
 * WHATWG-stream machinery costs more than the plain request and one string read.
 */
const keepAliveFetcher = createHttpFetcher();

/**
 * A subgraph request that may share an identical in-flight one: it belongs to an incoming query
 * (a mutation's plan reads what the mutation just wrote, so none of its fetches share, not even
 * its entity fetches) and is itself a query. The credentials are part of the fetch's identity
 * (src/dedupe.ts), so sharing never crosses callers.
 */
function isShareable(options: GraphQLDataSourceProcessOptions<GraphQLContext>): boolean {
  return (
    // Only an incoming operation's fetch has one (not a health check or schema load).
    'incomingRequestContext' in options &&
    options.incomingRequestContext.operation?.operation === 'query' &&
    options.request.query !== undefined &&
    /^\s*(?:query\b|\{)/.test(options.request.query)
  );
}

/**
 * One subgraph: the keep-alive fetcher, the caller's credentials and request id forwarded. With
 * a deduping fetcher, shareable requests go through a twin that uses it, the rest (mutations,
 * health checks) through the plain one: RemoteGraphQLDataSource's fetch path is private, and the
 * fetcher alone cannot tell a query's fetch from a mutation's.
 */
class SubgraphDataSource extends RemoteGraphQLDataSource<GraphQLContext> {
  private readonly shared: SubgraphDataSource | null;

  constructor(
    private readonly subgraph: string,
    url: string,
    private readonly logger: Logger,
    sharedFetcher?: RemoteGraphQLDataSource['fetcher'],
  ) {
    super({ url, fetcher: keepAliveFetcher });
    this.shared = sharedFetcher ? Object.assign(new SubgraphDataSource(subgraph, url, logger), { fetcher: sharedFetcher }) : null;
  }

  override process(options: GraphQLDataSourceProcessOptions<GraphQLContext>): ReturnType<RemoteGraphQLDataSource['process']> {
    return this.shared && isShareable(options) ? this.shared.process(options) : super.process(options);
  }

  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<GraphQLContext>): void {
    const ctx = context as Partial<GraphQLContext>;
    const headers = request.http?.headers;
    if (!headers) return;
    if (ctx.authorization) headers.set('authorization', ctx.authorization);
    if (ctx.requestId) headers.set('x-request-id', ctx.requestId);
  }

  /**
   * No response at all (refused, reset, DNS): the client learns the service is unavailable, the
   * log learns why. The default error would show the subgraph's internal URL.
   */
  override didEncounterError(error: Error, _req: unknown, response?: unknown, context?: GraphQLContext): void {
    if (response !== undefined) throw error;
    const cause = (error as { cause?: { code?: string } }).cause;
    this.logger.error(
      { requestId: context?.requestId, subgraph: this.subgraph, code: cause?.code, message: error.message },
      'subgraph unreachable',
    );
    throw toGraphQLError(unavailable());
  }
}

/**
 * Apollo `formatError` for the gateway. Errors a subgraph reported keep their message and
 * `extensions.code` (their originalError is the subgraph's JSON, not an Error) minus the raw
 * `response` Apollo attaches to non-2xx answers (it holds internal URLs and bodies). An Error
 * thrown inside the gateway itself is logged and shown only as an internal error. (The kit's
 * formatGraphQLError is for subgraphs: it would mask every error coming from a subgraph.)
 */
export function formatGatewayError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = error instanceof GraphQLError ? error.originalError : error;
    const ownCode = original instanceof GraphQLError ? original.extensions.code : undefined;
    if (typeof ownCode === 'string' && VALIDATION_CODES_KEPT.has(ownCode)) {
      return { ...formatted, extensions: { ...formatted.extensions, code: ownCode } };
    }
    if (original instanceof Error && !(original instanceof GraphQLError)) {
      logger.error({ err: original, path: formatted.path }, 'graphql execution failed');
      return { message: INTERNAL_MESSAGE, path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
    }
    // A request error Apollo raises without a code of its own (an unsupported persisted-query
    // version…) is the client's: never labelled an internal error.
    const status = (error instanceof GraphQLError ? (error.extensions.http as { status?: number } | undefined)?.status : undefined) ?? 0;
    if (formatted.extensions?.code === 'INTERNAL_SERVER_ERROR' && status >= 400 && status < 500) {
      return { ...formatted, extensions: { ...formatted.extensions, code: 'BAD_REQUEST' } };
    }
    if (formatted.extensions && 'response' in formatted.extensions) {
      const { response: _internal, ...extensions } = formatted.extensions;
      return { ...formatted, extensions };
    }
    return formatted;
  };
}

/**
 * `Cache-Control` comes from the subgraphs: each sends the policy its `@cacheControl` hints give,
 * and @apollo/gateway keeps the most restrictive (RemoteGraphQLDataSource honours subgraph
 * Cache-Control by default; Apollo Server's cache-control plugin writes the header). What no
 * subgraph can know is that the caller is authenticated: such an answer must never sit in a
 * shared cache, so it is private (docs/api/graphql.md).
 */
const privateForCallersPlugin: ApolloServerPlugin<GraphQLContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ contextValue, overallCachePolicy }) {
        if (contextValue.caller) overallCachePolicy.restrict({ scope: 'PRIVATE' });
      },
    };
  },
};

/**
 * Federated GraphQL with @apollo/gateway behind @apollo/server, served straight from node:http
 * (no express): `handle` turns the request into Apollo's HTTPGraphQLRequest and writes back its
 * HTTPGraphQLResponse.
 */
export function createGraphQL(opts: GraphQLOptions) {
  const { callers, bodyLimit, logger, limits } = opts;
  const policy = new OperationPolicy(limits, logger);
  // Halo sends nothing to Apollo's servers (STACK-NOTES.md); read by the gateway's constructor.
  process.env.APOLLO_TELEMETRY_DISABLED ??= 'true';
  const apolloLogger = logger.child({ component: 'apollo' });
  // One in-flight table for every subgraph (the URL is part of the key).
  const dedupe = (opts.dedupeInflight ?? true) ? dedupingFetcher(keepAliveFetcher) : null;

  const gateway = new ApolloGateway({
    // The gateway's policy (@authenticated, @cost, @listSize) is read from each loaded supergraph
    // by OperationPolicy; the source hands over SDL that only lost what @apollo/gateway would refuse.
    supergraphSdl: opts.supergraph,
    logger: apolloLogger,
    // An explicit `<SERVICE>_URL` wins over the URL the service published (src/supergraph), so
    // it moves REST and GraphQL together.
    buildService: ({ name, url }) => new SubgraphDataSource(name, opts.subgraphUrl(name, url), logger, dedupe?.fetcher),
    experimental_approximateQueryPlanStoreMiB: opts.queryPlanCacheMiB,
  });
  const trusted = opts.persistedQueries.trusted;
  const validationRules = [aliasLimitRule(limits.maxAliases), ...(opts.introspection === false ? [noIntrospectionRule] : [])];
  const responseCache = opts.responseCacheMiB ? new ResponseCacheStore(opts.responseCacheMiB * 1024 * 1024) : null;

  const server = new ApolloServer<GraphQLContext>({
    gateway,
    logger: apolloLogger,
    allowBatchedHttpRequests: true,
    // /graphql authenticates by the Authorization header only, never by cookies (docs/api/graphql.md).
    csrfPrevention: false,
    // Refused, when switched off, by noIntrospectionRule (one code for HTTP and WebSocket).
    introspection: true,
    includeStacktraceInErrorResponses: false,
    // The gateway's Lifecycle owns SIGTERM/SIGINT; Apollo's own handlers would re-raise the signal.
    stopOnTerminationSignals: false,
    formatError: formatGatewayError(logger),
    // graphql-js stops parsing past this many tokens (what GraphQL Armor's max-tokens does, without
    // parsing twice); a document is parsed only when Apollo has not cached it already.
    parseOptions: { maxTokens: limits.maxTokens },
    // Validation runs once per document (Apollo caches validated documents by query hash).
    validationRules,
    persistedQueries: {
      ttl: opts.persistedQueries.ttlSeconds,
      ...(trusted ? { cache: trustedDocumentsCache(trusted) } : opts.persistedQueries.cache ? { cache: opts.persistedQueries.cache } : {}),
    },
    plugins: [
      ...(opts.plugins ?? []),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      // Apollo's landing page loads Apollo Sandbox from a CDN; development gets GraphiQL (src/docs.ts).
      ApolloServerPluginLandingPageDisabled(),
      ...(trusted ? [trustedDocumentsPlugin<GraphQLContext>(trusted)] : []),
      operationChoicePlugin<GraphQLContext>(),
      policy.plugin<GraphQLContext>(),
      privateForCallersPlugin,
      // After the edge's checks: a cached answer is only served to an operation they let through.
      ...(responseCache ? [responseCachePlugin<GraphQLContext>(responseCache, opts.sharedResponseCache)] : []),
    ],
  });

  /** Apollo started (the supergraph loaded); false again once stopping begins. */
  let started = false;
  /** Apollo refuses `stop()` unless `start()` succeeded; a failed start has cleaned up already. */
  let startedOnce = false;

  async function execute(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    let body: unknown;
    if (hasBody(req)) {
      try {
        // Same answer as the services' body parser gives (kit errorHandler).
        if (isEncoded(req)) throw badRequest('Unsupported content encoding');
        const raw = await readBody(req, bodyLimit);
        // Apollo answers 400 to a POST whose body is not JSON; it never needs to see the bytes.
        if (isJsonType(req.headers['content-type'])) body = parseJson(raw);
      } catch (err) {
        return sendBodyError(res, err, logger);
      }
      if (Array.isArray(body) && body.length > limits.maxBatch) {
        const error = {
          message: `A batch of ${body.length} operations exceeds the limit of ${limits.maxBatch}`,
          extensions: { code: 'BATCH_LIMIT_EXCEEDED', batchSize: body.length, maxBatch: limits.maxBatch },
        };
        return sendJson(res, 400, { errors: [error] });
      }
    }
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const refused = requestError(body, req.method === 'GET' && q !== -1 ? url.slice(q) : '');
    if (refused) return sendJson(res, 400, { errors: [refused] });
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? 'GET', headers, search: q === -1 ? '' : url.slice(q), body },
      // Credentials are checked once per HTTP request (a batch shares them); a bad one is a 401.
      context: async () => {
        const caller = await callers.resolve(req, requestId).catch((err: unknown) => {
          throw isHaloError(err) ? toTransportError(err) : err;
        });
        return { requestId, authorization: req.headers.authorization, caller };
      },
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    // Apollo's cache-control plugin answers operations (no-store on errors); what fails before it
    // (a bad token, a bad request) or refuses a persisted query must never be cached either.
    const cacheControl = response.headers.get('cache-control');
    if (res.statusCode >= 400 || cacheControl === undefined || cacheControl === APOLLO_PQ_ERROR_CACHE_CONTROL) {
      res.setHeader('cache-control', NO_STORE);
    }
    if (response.body.kind === 'complete') {
      res.setHeader('content-length', Buffer.byteLength(response.body.string));
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  }

  return {
    async start(): Promise<void> {
      await server.start();
      started = startedOnce = true;
    },
    /** Ready once the supergraph is loaded and Apollo has started, until it stops. */
    isReady: () => started,
    /** In-flight deduplication of subgraph fetches (null when switched off): counters. */
    dedupe: dedupe && { inFlight: dedupe.inFlight, waiting: dedupe.waiting, shared: dedupe.shared },
    /** The edge response cache (null when off): entries and bytes held, lookups that hit and missed. */
    responseCache: responseCache && {
      entries: () => responseCache.size,
      bytes: () => responseCache.usedBytes,
      hits: () => responseCache.hits,
      misses: () => responseCache.misses,
    },
    /** A query or mutation that came another way (a WebSocket), through the same pipeline and plugins. */
    async executeOperation(
      request: { query: string; variables?: Record<string, unknown> | undefined; operationName?: string | undefined },
      contextValue: GraphQLContext,
    ): Promise<FormattedExecutionResult> {
      const response = await server.executeOperation(request, { contextValue });
      if (response.body.kind === 'single') return response.body.singleResult;
      return { errors: [{ message: 'Incremental delivery is not supported here', extensions: { code: 'BAD_REQUEST' } }] };
    },
    /** The checks every operation passes, and the supergraph loaded last (for subscriptions). */
    policy,
    /** Parsing and validation exactly as HTTP operations get them (token cap, alias cap). */
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules,
    handle(req: IncomingMessage, res: ServerResponse, requestId: string): void {
      execute(req, res, requestId).catch((err: unknown) => {
        logger.error({ err, requestId }, 'graphql request failed');
        if (!res.headersSent) sendJson(res, 500, { error: INTERNAL_MESSAGE });
        else res.destroy();
      });
    },
    async stop(): Promise<void> {
      started = false;
      if (!startedOnce) return;
      // Apollo stops the gateway too (which unwatches the file); the second stop is a no-op guard.
      await server.stop();
      await gateway.stop();
    },
  };
}

export type GraphQLHandler = ReturnType<typeof createGraphQL>;

/**
 * The first request error of a POST body (one operation or a batch) or a GET's parameters, checked
 * before Apollo sees them (src/request-checks.ts). A GET's parameters are decoded here only when
 * it has variables or extensions to look at.
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
  if (getSearch && (getSearch.includes('variables=') || getSearch.includes('extensions='))) {
    return operationRequestError(getOperationRequest(getSearch));
  }
  return null;
}

const isObject = (value: unknown): value is OperationRequest => typeof value === 'object' && value !== null;
