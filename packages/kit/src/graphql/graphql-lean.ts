import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServer, BaseContext, HTTPGraphQLResponse } from '@apollo/server';
import {
  defaultFieldResolver,
  execute,
  getNamedType,
  getOperationAST,
  GraphQLError,
  isCompositeType,
  isObjectType,
  Kind,
  OperationTypeNode,
  parse,
  specifiedRules,
  validate,
  visit,
  BREAK,
  type DirectiveNode,
  type DocumentNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLFormattedError,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { LRUCache } from 'lru-cache';
import { load } from '../process/lazy';
import { HaloError, toRestError } from '../errors/errors';
import { logRequest } from '../logging/access-log';
import type { Logger } from '../logging/logger';
import type { ServiceMetrics } from '../metrics/metrics';
import { runInRequest } from '../logging/request-context';
import { REQUEST_ID_HEADER, saneRequestId } from '../logging/request-id';
import { repeatedHeader } from '../http/single-headers';

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
  formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  logger: Logger;
  metrics?: ServiceMetrics | undefined;
  bodyLimit: number;
  /** Documents kept parsed and validated (by query text). */
  documents?: number;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });
const CACHE_POLICY = Symbol('halo.leanCachePolicy');
/** Answers whose body was refused (400) before any route was matched. */
const bodyRefused = new WeakSet<ServerResponse>();

/** A document the lean path executes, or `null`: Apollo answers it (it does not parse, validate…). */
type Prepared = { document: DocumentNode } | null;

// eslint-disable-next-line max-lines-per-function -- one closure over the server's parts, shared by claims, serve and the Apollo fallback
export function leanGraphql<C extends BaseContext>(opts: LeanGraphqlOptions<C>): LeanGraphql {
  const { apollo, schema, formatError, logger, metrics, bodyLimit } = opts;
  const documents = new LRUCache<string, { prepared: Prepared }>({ max: opts.documents ?? 1000 });
  // Apollo Server's default: stack traces in error answers unless NODE_ENV is production or test.
  const nodeEnv = process.env.NODE_ENV ?? '';
  const includeStacktrace = nodeEnv !== 'production' && nodeEnv !== 'test';
  instrumentCacheHints(schema);
  const answered = metrics?.counter(
    'halo_graphql_lean_requests_total',
    'POST /graphql requests taken by the lean path (ADR 0015), by who answered: lean, or apollo (what the lean path leaves to it)',
    ['by'],
  );
  answered?.inc({ by: 'lean' }, 0);
  answered?.inc({ by: 'apollo' }, 0);

  const prepare = (query: string): Prepared => {
    let cached = documents.get(query);
    if (cached === undefined) {
      cached = { prepared: prepareDocument(schema, query) };
      documents.set(query, cached);
    }
    return cached.prepared;
  };

  const claims = (req: IncomingMessage): boolean => {
    if (req.method !== 'POST' || req.url !== '/graphql') return false;
    const h = req.headers;
    if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return false;
    const length = h['content-length'];
    if (length === undefined || !/^\d{1,15}$/.test(length) || Number(length) > bodyLimit) return false;
    if (!isJsonUtf8(h['content-type'])) return false;
    const accept = h.accept;
    if (accept !== undefined && accept !== '*/*' && accept !== 'application/json') return false;
    return repeatedHeader(req.rawHeaders) === null;
  };

  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    // Express names the route only once the body is read: a body it refuses is `unmatched`.
    metrics?.timeRequest(req, res, () => (bodyRefused.has(res) ? 'unmatched' : '/graphql'));
    const requestId = saneRequestId(req.headers[REQUEST_ID_HEADER]);
    const r = req as IncomingMessage & { id: string; log: Logger };
    r.id = requestId;
    r.log = logger;
    res.setHeader('X-Request-Id', requestId);
    runInRequest({ requestId }, serveInContext, req, res);
  };

  function serveInContext(req: IncomingMessage, res: ServerResponse): void {
    if (logger.isLevelEnabled('info')) logRequest(logger, req, res, 'url', req.url!);
    readBody(req, (err, body) => {
      if (err) {
        bodyRefused.add(res);
        return void sendRestError(res, err);
      }
      answer(req, res, body).catch((error: unknown) => {
        logger.error({ err: error }, 'request failed');
        if (res.headersSent) return void res.end();
        sendRestError(res, error);
      });
    });
  }

  async function answer(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const request = leanRequest(body);
    const prepared = request && prepare(request.query);
    const operation = prepared && getOperationAST(prepared.document, request.operationName);
    if (!request || !prepared || !operation || operation.operation === OperationTypeNode.SUBSCRIPTION) return viaApollo(req, res, body);
    let contextValue: C;
    try {
      contextValue = await opts.context(req);
    } catch {
      // Apollo answers a refused caller (401 UNAUTHENTICATED) itself, the same way as before.
      return viaApollo(req, res, body);
    }
    const hints = new RequestCachePolicy();
    Object.defineProperty(contextValue, CACHE_POLICY, { value: hints });
    const result = await execute({
      schema,
      document: prepared.document,
      contextValue,
      variableValues: request.variables,
      operationName: request.operationName,
    });
    // No data: the operation or its variables were refused before any resolver ran. Apollo words that.
    if (result.data === undefined) return viaApollo(req, res, body);
    answered?.inc({ by: 'lean' });
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
    const cacheable = errors ? null : hints.overall().policyIfCacheable();
    headers.set('cache-control', cacheable ? `max-age=${cacheable.maxAge}, ${cacheable.scope.toLowerCase()}` : 'no-store');
    headers.set('content-type', JSON_CONTENT_TYPE);
    const payload = `${JSON.stringify({ errors, data: result.data, extensions: result.extensions })}\n`;
    for (const [name, value] of headers) res.setHeader(name, value);
    res.statusCode = status;
    res.setHeader('Content-Length', Buffer.byteLength(payload));
    res.end(payload);
  }

  /** Apollo Server's own answer, written as @as-integrations/express5 writes it. */
  async function viaApollo(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    answered?.inc({ by: 'apollo' });
    const { HeaderMap } = load.apolloServer();
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const response: HTTPGraphQLResponse = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: 'POST', headers, search: '', body },
      context: () => opts.context(req),
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      const text = response.body.string;
      if (res.getHeader('content-type') === undefined) res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.setHeader('Content-Length', Buffer.byteLength(text));
      res.end(text);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  }

  /** The body as body-parser reads it here: the bytes of `Content-Length`, strict UTF-8, any JSON. */
  function readBody(req: IncomingMessage, done: (err: unknown, body?: unknown) => void): void {
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (err: unknown, body?: unknown) => {
      if (settled) return;
      settled = true;
      done(err, body);
    };
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => finish(new HaloError('BAD_REQUEST', 'Bad request')));
    req.on('aborted', () => finish(new HaloError('BAD_REQUEST', 'Bad request')));
    req.on('end', () => {
      const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (buf.length === 0) return finish(null, {});
      let text: string;
      try {
        text = STRICT_UTF8.decode(buf);
      } catch {
        return finish(new HaloError('BAD_REQUEST', 'Invalid JSON'));
      }
      // iconv-lite (under body-parser) drops a leading byte order mark.
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      try {
        finish(null, JSON.parse(text));
      } catch {
        finish(new HaloError('BAD_REQUEST', 'Invalid JSON'));
      }
    });
  }

  return { claims, serve };
}

/** The kit's REST error answer, as `errorHandler` sends it through express's `res.json`. */
function sendRestError(res: ServerResponse, err: unknown): void {
  const { status, body } = toRestError(err);
  const payload = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  res.end(payload);
}

/** `application/json`, in UTF-8 (no charset or `utf-8`): the type express.json reads without a 415. */
function isJsonUtf8(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const lower = contentType.toLowerCase();
  if (lower === 'application/json') return true;
  const semi = lower.indexOf(';');
  if (semi < 0 || lower.slice(0, semi).trim() !== 'application/json') return false;
  const params = lower.slice(semi + 1).trim();
  return params === 'charset=utf-8' || params === 'charset="utf-8"';
}

/** One plain GraphQL operation as a POST body carries it (the subgraphs' and the gateway's lean paths). */
export interface LeanRequest {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/** The body as one plain operation, or null when Apollo must read it (batches, extensions, odd fields). */
export function leanRequest(body: unknown): LeanRequest | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  for (const key in b) if (key !== 'query' && key !== 'variables' && key !== 'operationName') return null;
  const { query, variables, operationName } = b;
  if (typeof query !== 'string' || query === '') return null;
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
  return {
    query,
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    operationName: operationName ?? undefined,
  };
}

/** `__schema` and `__type`: the introspection fields (`__typename` is not one: every client needs it). */
export const isIntrospectionField = (name: string): boolean => name === '__schema' || name === '__type';

/** Whether a document selects an introspection field anywhere (the lean paths leave those to Apollo). */
export function asksForIntrospection(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Field(node) {
      if (!isIntrospectionField(node.name.value)) return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** Parsed and validated with graphql-js's rules, as Apollo does; null for what Apollo must answer. */
function prepareDocument(schema: GraphQLSchema, query: string): Prepared {
  let document: DocumentNode;
  try {
    document = parse(query);
  } catch {
    return null;
  }
  // Introspection is refused in production by an extra Apollo rule: Apollo keeps answering it.
  if (asksForIntrospection(document)) return null;
  if (validate(schema, document, specifiedRules).length > 0) return null;
  return { document };
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

// ---- Cache-Control, as @apollo/server/plugin/cacheControl computes it --------------------------

interface CacheHint {
  maxAge?: number | undefined;
  scope?: 'PUBLIC' | 'PRIVATE' | undefined;
  inheritMaxAge?: boolean;
}

/**
 * Apollo's `CachePolicy` (cachePolicy.ts): what `info.cacheControl.cacheHint` is to a resolver,
 * and what an operation's answer may be cached for (the gateway's lean path restricts one by each
 * subgraph's Cache-Control, as Apollo Server's does).
 */
export class CachePolicy {
  maxAge: number | undefined = undefined;
  scope: 'PUBLIC' | 'PRIVATE' | undefined = undefined;

  restrict(hint: CacheHint): void {
    if (hint.maxAge !== undefined && (this.maxAge === undefined || hint.maxAge < this.maxAge)) this.maxAge = hint.maxAge;
    if (hint.scope !== undefined && this.scope !== 'PRIVATE') this.scope = hint.scope;
  }

  replace(hint: CacheHint): void {
    if (hint.maxAge !== undefined) this.maxAge = hint.maxAge;
    if (hint.scope !== undefined) this.scope = hint.scope;
  }

  policyIfCacheable(): { maxAge: number; scope: 'PUBLIC' | 'PRIVATE' } | null {
    if (this.maxAge === undefined || this.maxAge === 0) return null;
    return { maxAge: this.maxAge, scope: this.scope ?? 'PUBLIC' };
  }
}

/** One request's hints: every field resolution's policy, folded into one when execution is over. */
class RequestCachePolicy {
  private readonly fields: { policy: CachePolicy; restrictToDefault: boolean }[] = [];

  add(policy: CachePolicy, restrictToDefault: boolean): void {
    this.fields.push({ policy, restrictToDefault });
  }

  /** The plugin's end-of-field step (maxAge 0 where nothing set one), then `overallCachePolicy`. */
  overall(): CachePolicy {
    const overall = new CachePolicy();
    for (const { policy, restrictToDefault } of this.fields) {
      if (restrictToDefault && policy.maxAge === undefined) policy.restrict({ maxAge: 0 });
      overall.restrict(policy);
    }
    return overall;
  }
}

function hintFromDirectives(directives: readonly DirectiveNode[] | undefined): CacheHint | undefined {
  const directive = directives?.find((d) => d.name.value === 'cacheControl');
  if (!directive?.arguments) return undefined;
  const arg = (name: string) => directive.arguments!.find((a) => a.name.value === name)?.value;
  const scopeValue = arg('scope');
  const scopeString = scopeValue?.kind === Kind.ENUM ? scopeValue.value : undefined;
  const scope = scopeString === 'PUBLIC' || scopeString === 'PRIVATE' ? scopeString : undefined;
  const inherit = arg('inheritMaxAge');
  if (inherit?.kind === Kind.BOOLEAN && inherit.value) return { inheritMaxAge: true, scope };
  const maxAge = arg('maxAge');
  return { maxAge: maxAge?.kind === Kind.INT ? parseInt(maxAge.value) : undefined, scope };
}

function hintFromType(t: GraphQLCompositeType): CacheHint {
  const own = hintFromDirectives(t.astNode?.directives);
  if (own) return own;
  for (const node of t.extensionASTNodes) {
    const hint = hintFromDirectives(node.directives);
    if (hint) return hint;
  }
  return {};
}

/**
 * Every field of the schema's object types reports its cache hint to the lean path's policy when
 * the context carries one (Apollo's own instrumentation does the same for its plugin, keyed by
 * its own symbol): the field's hint computed once, the restriction applied per resolution.
 */
function instrumentCacheHints(schema: GraphQLSchema): void {
  const typeHints = new Map<GraphQLCompositeType, CacheHint>();
  const typeHint = (t: GraphQLCompositeType) => {
    let hint = typeHints.get(t);
    if (hint === undefined) typeHints.set(t, (hint = hintFromType(t)));
    return hint;
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) wrapField(field, typeHint);
  }
}

function wrapField(field: GraphQLField<unknown, unknown>, typeHint: (t: GraphQLCompositeType) => CacheHint): void {
  const original = field.resolve ?? defaultFieldResolver;
  const fieldHint = hintFromDirectives(field.astNode?.directives) ?? {};
  const targetType = getNamedType(field.type);
  const composite = isCompositeType(targetType);
  field.resolve = (source: unknown, args: Record<string, unknown>, contextValue: unknown, info: GraphQLResolveInfo) => {
    const request = (contextValue as { [CACHE_POLICY]?: RequestCachePolicy } | null | undefined)?.[CACHE_POLICY];
    if (request !== undefined) {
      // The plugin's willResolveField: the type's hint, then the field's (inheritMaxAge aside).
      const policy = new CachePolicy();
      let inheritMaxAge = false;
      if (composite) {
        const annotation = typeHint(targetType);
        policy.replace(annotation);
        inheritMaxAge = !!annotation.inheritMaxAge;
      }
      if (fieldHint.inheritMaxAge && policy.maxAge === undefined) {
        inheritMaxAge = true;
        if (fieldHint.scope) policy.replace({ scope: fieldHint.scope });
      } else {
        policy.replace(fieldHint);
      }
      (info as { cacheControl?: unknown }).cacheControl = {
        setCacheHint: (hint: CacheHint) => policy.replace(hint),
        cacheHint: policy,
        cacheHintFromType: typeHint,
      };
      request.add(policy, (composite && !inheritMaxAge) || !info.path.prev);
    }
    return original(source, args, contextValue, info);
  };
}
