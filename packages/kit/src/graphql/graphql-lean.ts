import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServer, BaseContext } from '@apollo/server';
import { execute, getOperationAST, OperationTypeNode, type GraphQLSchema } from 'graphql';
import type { Counter } from 'prom-client';
import { logRequest } from '../logging/access-log';
import type { Logger } from '../logging/logger';
import type { ServiceMetrics } from '../metrics/metrics';
import { runInRequest } from '../logging/request-context';
import { REQUEST_ID_HEADER, saneRequestId } from '../logging/request-id';
import { attachCachePolicy, instrumentCacheHints } from './cache-control';
import { sendRestError, writeLeanAnswer, type FormatError } from './lean-answer';
import { viaApollo, type ApolloFallback } from './lean-apollo';
import { LeanDocuments } from './lean-documents';
import { leanAdmits, leanRequest, readBody } from './lean-request';

/**
 * The lean `/graphql` path (ADR 0015): the plain `POST /graphql` with a JSON body that the gateway
 * sends every subgraph, served at the HTTP server's edge without express, body-parser and Apollo
 * Server's per-request pipeline, and answered with the same bytes, status and headers they would
 * have given. What it does not cover goes on unchanged:
 *
 * - before the body is read (anything but POST to exactly `/graphql` with `application/json` in
 *   UTF-8, a known `Content-Length` within the limit, no `Content-Encoding`, an `Accept` that picks
 *   `application/json`, no repeated single header): the express app, as before;
 * - after it (not one `{ query, variables?, operationName? }` object, `extensions`, a document that
 *   does not parse or validate or asks for `__schema`/`__type`, a subscription, a context that
 *   refuses the caller, variables that do not coerce): Apollo Server's own
 *   `executeHTTPGraphQLRequest`, written out as its express integration writes it.
 *
 * Parsed and validated documents are kept by query text (LRU). Execution is graphql-js `execute`
 * on the same schema with the same context; errors go through Apollo's normalisation and the kit's
 * `formatError`; `Cache-Control` is computed from `@cacheControl` hints exactly as Apollo's cache
 * control plugin does (every field resolved restricts the policy; any error means `no-store`).
 */
export interface LeanGraphql {
  /** Whether this request is one the lean path takes (headers only; the body is still unread). */
  claims(req: IncomingMessage): boolean;
  serve(req: IncomingMessage, res: ServerResponse): void;
}

export interface LeanGraphqlOptions<C extends BaseContext> {
  apollo: ApolloServer<C>;
  schema: GraphQLSchema;
  /** The context Apollo's express integration builds (the same function). */
  context: (req: IncomingMessage) => Promise<C>;
  formatError: FormatError;
  logger: Logger;
  metrics?: ServiceMetrics | undefined;
  bodyLimit: number;
  /** Documents kept parsed and validated (by query text). */
  documents?: number;
}

/** Answers whose body was refused (400) before any route was matched. */
const bodyRefused = new WeakSet<ServerResponse>();

/** The lean path of one subgraph: built once at start, then shared by every request. */
class LeanSubgraph<C extends BaseContext> implements LeanGraphql, ApolloFallback<C> {
  readonly apollo: ApolloServer<C>;
  readonly schema: GraphQLSchema;
  readonly context: (req: IncomingMessage) => Promise<C>;
  readonly formatError: FormatError;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics | undefined;
  readonly bodyLimit: number;
  readonly documents: LeanDocuments;
  /** Apollo Server's default: stack traces in error answers unless NODE_ENV is production or test. */
  readonly includeStacktrace: boolean;
  readonly answered: Counter<'by'> | undefined;

  constructor(opts: LeanGraphqlOptions<C>) {
    this.apollo = opts.apollo;
    this.schema = opts.schema;
    this.context = opts.context;
    this.formatError = opts.formatError;
    this.logger = opts.logger;
    this.metrics = opts.metrics;
    this.bodyLimit = opts.bodyLimit;
    this.documents = new LeanDocuments(opts.schema, opts.documents ?? 1000);
    const nodeEnv = process.env.NODE_ENV ?? '';
    this.includeStacktrace = nodeEnv !== 'production' && nodeEnv !== 'test';
    instrumentCacheHints(opts.schema);
    this.answered = opts.metrics?.counter(
      'halo_graphql_lean_requests_total',
      'POST /graphql requests taken by the lean path (ADR 0015), by who answered: lean, or apollo (what the lean path leaves to it)',
      ['by'],
    );
    this.answered?.inc({ by: 'lean' }, 0);
    this.answered?.inc({ by: 'apollo' }, 0);
  }

  claims(req: IncomingMessage): boolean {
    return leanAdmits(req, this.bodyLimit);
  }

  serve(req: IncomingMessage, res: ServerResponse): void {
    // Express names the route only once the body is read: a body it refuses is `unmatched`.
    this.metrics?.timeRequest(req, res, () => (bodyRefused.has(res) ? 'unmatched' : '/graphql'));
    const requestId = saneRequestId(req.headers[REQUEST_ID_HEADER]);
    const r = req as IncomingMessage & { id: string; log: Logger };
    r.id = requestId;
    r.log = this.logger;
    res.setHeader('X-Request-Id', requestId);
    runInRequest({ requestId }, serveInContext, this, req, res);
  }

  /** One plain operation executed here; anything else (or refused before a resolver ran) is Apollo's. */
  async answer(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const request = leanRequest(body);
    const prepared = request && this.documents.prepare(request.query);
    const operation = prepared && getOperationAST(prepared.document, request.operationName);
    if (!request || !prepared || !operation || operation.operation === OperationTypeNode.SUBSCRIPTION)
      return viaApollo(this, req, res, body);
    let contextValue: C;
    try {
      contextValue = await this.context(req);
    } catch {
      // Apollo answers a refused caller (401 UNAUTHENTICATED) itself, the same way as before.
      return viaApollo(this, req, res, body);
    }
    const hints = attachCachePolicy(contextValue);
    const result = await execute({
      schema: this.schema,
      document: prepared.document,
      contextValue,
      variableValues: request.variables,
      operationName: request.operationName,
    });
    // No data: the operation or its variables were refused before any resolver ran. Apollo words that.
    if (result.data === undefined) return viaApollo(this, req, res, body);
    this.answered?.inc({ by: 'lean' });
    writeLeanAnswer(res, result, hints, this.includeStacktrace, this.formatError);
  }
}

/** Inside the request's context: the access log, the body, then the answer (or the kit's REST error). */
function serveInContext<C extends BaseContext>(lean: LeanSubgraph<C>, req: IncomingMessage, res: ServerResponse): void {
  const logger = lean.logger;
  if (logger.isLevelEnabled('info')) logRequest(logger, req, res, 'url', req.url!);
  readBody(req, (err, body) => {
    if (err) {
      bodyRefused.add(res);
      return void sendRestError(res, err);
    }
    lean.answer(req, res, body).catch((error: unknown) => {
      logger.error({ err: error }, 'request failed');
      if (res.headersSent) return void res.end();
      sendRestError(res, error);
    });
  });
}

export function leanGraphql<C extends BaseContext>(opts: LeanGraphqlOptions<C>): LeanGraphql {
  return new LeanSubgraph(opts);
}
