import { unlessGiven } from './client-info.js';
import { GraphQLRequestError, HaloApiError, type GraphQLErrorEntry } from './errors.js';
import { boundaryOf, INCREMENTAL_ACCEPT, mergePayload, MultipartReader } from './incremental.js';
import { resumable, type ResumeOptions } from './resume.js';
import { iterateSubscription, type SubscriptionSink, type SubscriptionTransport } from './subscriptions.js';
import type { HaloResponse, RequestSpec, Transport } from './transport.js';
import type { TypedDocument } from './types.js';
import { canHash, sha256Hex } from './web-crypto.js';

/** One GraphQL answer (`data` and/or `errors`). */
export interface GraphQLResult<TData = unknown> {
  data?: TData | null;
  errors?: GraphQLErrorEntry[];
  extensions?: Record<string, unknown>;
}

export interface GraphQLOperation<TVariables = Record<string, unknown>> {
  query: string;
  variables?: TVariables;
  operationName?: string;
}

export interface GraphQLCallOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  operationName?: string;
  /** Queries only: GET with the operation in the URL, so a CDN can cache it (default: the client's `getForQueries`). */
  get?: boolean;
  /** Automatic persisted queries for this call (default: the client's `persistedQueries`). */
  persisted?: boolean;
}

export interface SubscribeOptions<TData> {
  /** Resume after the last delivered event on every reconnect, each event delivered once (README "Resuming subscriptions"). */
  resume?: ResumeOptions<TData>;
}

export interface GraphQLSettings {
  /** Default `/graphql`. */
  path: string;
  /** Send the query's SHA-256 first (APQ); default true. */
  persistedQueries: boolean;
  /** Send queries as GET (hash only when persisted); default false. */
  getForQueries: boolean;
}

/** An answer with the HTTP facts that came with it. */
export interface GraphQLResponse<TData> {
  result: GraphQLResult<TData>;
  status: number;
  requestId: string | null;
  headers: Headers;
}

const PQ_NOT_FOUND = 'PERSISTED_QUERY_NOT_FOUND';
const PQ_NOT_SUPPORTED = 'PERSISTED_QUERY_NOT_SUPPORTED';

interface Wire {
  query?: string;
  variables?: unknown;
  operationName?: string;
  extensions?: { persistedQuery: { version: 1; sha256Hash: string } };
}

/**
 * `/graphql` over HTTP (docs/api/graphql.md), and subscriptions through src/subscriptions.ts.
 *
 * Persisted queries (APQ): the first request carries only the query's SHA-256; the gateway answers
 * PERSISTED_QUERY_NOT_FOUND for a hash it has not seen, and the SDK resends hash + query, which
 * registers it. Queries sent as GET use the hash alone in the URL (cacheable); the registering
 * resend goes as POST, as Apollo's own link does, to keep long queries out of URLs.
 *
 * Retries: a query is an idempotent call (the spec retries "idempotent calls"), so queries are
 * retried like GETs whatever their method; mutations are not.
 */
export class GraphQLClient {
  private readonly hashes = new Map<string, string>();
  /** Turned off for good when the server says it does not support APQ. */
  private apqSupported = true;

  constructor(
    private readonly t: Transport,
    private readonly settings: GraphQLSettings,
    private readonly subscriptions: SubscriptionTransport,
    /** The client's name and version headers (./client-info.ts), less those the client's own `headers` set. */
    private readonly clientInfo: Record<string, string> = {},
  ) {}

  /** Runs a query; its `data`, or GraphQLRequestError when the answer has `errors`. */
  async query<TData = unknown, TVariables extends Record<string, unknown> = Record<string, unknown>>(
    document: TypedDocument<TData, TVariables> | string,
    variables?: TVariables,
    opts: GraphQLCallOptions = {},
  ): Promise<TData> {
    return dataOf(await this.execute<TData>('query', { query: document, ...(variables ? { variables } : {}) }, opts));
  }

  /** Runs a mutation (always POST, never retried); its `data`, or GraphQLRequestError. */
  async mutate<TData = unknown, TVariables extends Record<string, unknown> = Record<string, unknown>>(
    document: TypedDocument<TData, TVariables> | string,
    variables?: TVariables,
    opts: Omit<GraphQLCallOptions, 'get'> = {},
  ): Promise<TData> {
    return dataOf(await this.execute<TData>('mutation', { query: document, ...(variables ? { variables } : {}) }, { ...opts, get: false }));
  }

  /**
   * The whole answer, `errors` included, without throwing on them (still throws HaloApiError for
   * a non-GraphQL answer, e.g. a proxy's 502 page, and SignedOutError / network errors).
   */
  async execute<TData = unknown>(
    kind: 'query' | 'mutation',
    op: GraphQLOperation<unknown>,
    opts: GraphQLCallOptions = {},
  ): Promise<GraphQLResponse<TData>> {
    const operationName = opts.operationName ?? op.operationName;
    const base: Wire = { ...(op.variables !== undefined ? { variables: op.variables } : {}), ...(operationName ? { operationName } : {}) };
    const idempotent = kind === 'query';
    const get = kind === 'query' && (opts.get ?? this.settings.getForQueries);
    const hash = this.usePersisted(opts) ? await this.hashOf(op.query) : undefined;
    if (!hash) return this.send<TData>({ ...base, query: op.query }, get, idempotent, opts);

    const extensions = { persistedQuery: { version: 1 as const, sha256Hash: hash } };
    const first = await this.send<TData>({ ...base, extensions }, get, idempotent, opts);
    const codes = first.result.errors?.map((e) => e.extensions?.code) ?? [];
    if (codes.includes(PQ_NOT_SUPPORTED)) {
      this.apqSupported = false;
      return this.send<TData>({ ...base, query: op.query }, false, idempotent, opts);
    }
    if (!codes.includes(PQ_NOT_FOUND)) return first;
    return this.send<TData>({ ...base, query: op.query, extensions }, false, idempotent, opts);
  }

  /**
   * A query with `@defer` (docs/api/graphql.md "Deferred fragments"): the answer as it grows. The
   * first value is the primary part; each later one the answer so far with the next deferred
   * part merged in; `hasNext` is false on the last. A gateway that answers whole yields once.
   * Errors stay in the values (a deferred field's error arrives with its part); a non-GraphQL
   * answer throws HaloApiError. Always POST, never persisted (the query is sent as written).
   */
  async *deferred<TData = unknown, TVariables extends Record<string, unknown> = Record<string, unknown>>(
    document: TypedDocument<TData, TVariables> | string,
    variables?: TVariables,
    opts: Omit<GraphQLCallOptions, 'get' | 'persisted'> = {},
  ): AsyncGenerator<GraphQLResult<TData> & { hasNext: boolean }> {
    const operationName = opts.operationName;
    const wire: Wire = { query: document, ...(variables ? { variables } : {}), ...(operationName ? { operationName } : {}) };
    const spec: RequestSpec = { method: 'POST', path: this.settings.path, body: wire, idempotent: true, stream: true };
    const res = await this.t.exchange<unknown>({
      ...spec,
      auth: 'optional',
      ...(opts.signal ? { signal: opts.signal } : {}),
      headers: { accept: INCREMENTAL_ACCEPT, ...this.headersOf(opts) },
    });
    if (!isStreamed(res.body)) {
      if (!isResult(res.body)) throw this.notGraphQL(spec, res);
      yield { ...(res.body as GraphQLResult<TData>), hasNext: false };
      return;
    }
    const reader = new MultipartReader(boundaryOf(res.headers.get('content-type') ?? ''));
    const decoder = new TextDecoder();
    let so: ReturnType<typeof mergePayload> | null = null;
    const body = res.body.body;
    if (body === null) return;
    const chunks = body.getReader();
    try {
      for (;;) {
        const { value, done } = await chunks.read();
        const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
        for (const payload of reader.push(text)) {
          so = mergePayload(so, payload);
          yield { ...(so as GraphQLResult<TData>), hasNext: payload.hasNext };
        }
        if (done || reader.done) return;
      }
    } finally {
      // Left early (`break`) or done: the rest of the answer is not read.
      void chunks.cancel().catch(() => undefined);
    }
  }

  /**
   * Batching: an array of operations in one POST, an array of answers out, in order
   * (docs/api/graphql.md: at most `GRAPHQL_MAX_BATCH`, default 10). Each answer is returned as
   * is, errors included. Persisted: hashes first, then one resend of just the unknown ones.
   * Retried only when no operation is a mutation.
   */
  async batch(
    ops: readonly GraphQLOperation<unknown>[],
    opts: Omit<GraphQLCallOptions, 'get' | 'operationName'> = {},
  ): Promise<GraphQLResult[]> {
    if (ops.length === 0) return [];
    const idempotent = ops.every((op) => !mayBeMutation(op.query));
    const wire = (op: GraphQLOperation<unknown>, extra: Partial<Wire>): Wire => ({
      ...(op.variables !== undefined ? { variables: op.variables } : {}),
      ...(op.operationName ? { operationName: op.operationName } : {}),
      ...extra,
    });
    if (!this.usePersisted(opts))
      return this.sendBatch(
        ops.map((op) => wire(op, { query: op.query })),
        idempotent,
        opts,
      );

    const hashes = await Promise.all(ops.map((op) => this.hashOf(op.query)));
    const ext = (i: number) => ({ persistedQuery: { version: 1 as const, sha256Hash: hashes[i]! } });
    const results = await this.sendBatch(
      ops.map((op, i) => wire(op, { extensions: ext(i) })),
      idempotent,
      opts,
    );
    const missing = results.flatMap((r, i) =>
      r.errors?.some((e) => e.extensions?.code === PQ_NOT_FOUND || e.extensions?.code === PQ_NOT_SUPPORTED) ? [i] : [],
    );
    if (missing.length === 0) return results;
    const again = await this.sendBatch(
      missing.map((i) => wire(ops[i]!, { query: ops[i]!.query, extensions: ext(i) })),
      idempotent,
      opts,
    );
    missing.forEach((i, j) => (results[i] = again[j]!));
    return results;
  }

  /**
   * `newMessage` and friends over graphql-ws or graphql-sse (`subscriptions.transport`). Returns the
   * unsubscribe function. `options.resume`: deliver each event once across reconnects (./resume.ts).
   */
  subscribe<TData = unknown, TVariables extends Record<string, unknown> = Record<string, unknown>>(
    document: TypedDocument<TData, TVariables> | string,
    variables: TVariables | undefined,
    sink: SubscriptionSink<TData>,
    options: SubscribeOptions<TData> = {},
  ): () => void {
    const op = { query: document, ...(variables ? { variables } : {}) };
    const subscribe = (o: GraphQLOperation<unknown>, s: SubscriptionSink<TData>) => this.subscriptions.subscribe<TData>(o, s);
    return options.resume ? resumable(subscribe, op, sink, options.resume) : subscribe(op, sink);
  }

  /** The events of a subscription as an async iterator (`for await`); `return()` (or `break`) unsubscribes. */
  iterate<TData = unknown, TVariables extends Record<string, unknown> = Record<string, unknown>>(
    document: TypedDocument<TData, TVariables> | string,
    variables?: TVariables,
    options: SubscribeOptions<TData> = {},
  ): AsyncIterableIterator<GraphQLResult<TData>> {
    return iterateSubscription<TData>((sink) => this.subscribe(document, variables, sink, options));
  }

  private usePersisted(opts: GraphQLCallOptions): boolean {
    return (opts.persisted ?? this.settings.persistedQueries) && this.apqSupported && canHash();
  }

  private async hashOf(query: string): Promise<string> {
    let hash = this.hashes.get(query);
    if (hash === undefined) {
      hash = await sha256Hex(query);
      if (this.hashes.size >= 500) this.hashes.clear();
      this.hashes.set(query, hash);
    }
    return hash;
  }

  private async send<TData>(wire: Wire, get: boolean, idempotent: boolean, opts: GraphQLCallOptions): Promise<GraphQLResponse<TData>> {
    const spec: RequestSpec = get
      ? { method: 'GET', path: this.settings.path, query: toQueryString(wire) }
      : { method: 'POST', path: this.settings.path, body: wire, idempotent };
    const res = await this.t.exchange<unknown>({
      ...spec,
      auth: 'optional',
      ...(opts.signal ? { signal: opts.signal } : {}),
      headers: this.headersOf(opts),
    });
    if (!isResult(res.body)) throw this.notGraphQL(spec, res);
    return { result: res.body as GraphQLResult<TData>, status: res.status, requestId: res.requestId, headers: res.headers };
  }

  private async sendBatch(wire: Wire[], idempotent: boolean, opts: GraphQLCallOptions): Promise<GraphQLResult[]> {
    const spec: RequestSpec = { method: 'POST', path: this.settings.path, body: wire, idempotent };
    const res = await this.t.exchange<unknown>({
      ...spec,
      auth: 'optional',
      ...(opts.signal ? { signal: opts.signal } : {}),
      headers: this.headersOf(opts),
    });
    if (Array.isArray(res.body) && res.body.length === wire.length && res.body.every(isResult)) return res.body as GraphQLResult[];
    // The whole batch was refused (e.g. 400 BATCH_LIMIT_EXCEEDED): one answer with errors.
    if (isResult(res.body) && (res.body as GraphQLResult).errors?.length) {
      const body = res.body as GraphQLResult;
      throw new GraphQLRequestError(body.errors!, body.data ?? null, res.status, res.requestId);
    }
    throw this.notGraphQL(spec, res);
  }

  /** A request's own headers: the client's name and version, unless the call names them itself. */
  private headersOf(opts: GraphQLCallOptions): Record<string, string> {
    return opts.headers ? { ...unlessGiven(this.clientInfo, opts.headers), ...opts.headers } : this.clientInfo;
  }

  private notGraphQL(spec: RequestSpec, res: HaloResponse<unknown>): HaloApiError {
    if (res.status >= 400) return this.t.apiError(spec, res);
    return new HaloApiError({
      status: res.status,
      message: 'Not a GraphQL answer',
      body: res.body,
      requestId: res.requestId,
      retryAfterMs: null,
      method: spec.method,
      url: this.t.url(spec),
    });
  }
}

function dataOf<TData>(res: GraphQLResponse<TData>): TData {
  const { result } = res;
  if (result.errors?.length) throw new GraphQLRequestError(result.errors, result.data ?? null, res.status, res.requestId);
  return result.data as TData;
}

/** A multipart answer the transport left unread (a fetch Response; by shape: fetch may come from another realm). */
const isStreamed = (body: unknown): body is Response =>
  typeof body === 'object' && body !== null && typeof (body as Partial<Response>).headers?.get === 'function' && 'body' in body;

const isResult = (body: unknown): boolean =>
  typeof body === 'object' && body !== null && !Array.isArray(body) && ('data' in body || 'errors' in body);

/** GraphQL over GET: `query`, `operationName`, and JSON `variables` / `extensions` in the query string. */
function toQueryString(wire: Wire): Record<string, string | undefined> {
  return {
    query: wire.query,
    operationName: wire.operationName,
    variables: wire.variables === undefined ? undefined : JSON.stringify(wire.variables),
    extensions: wire.extensions === undefined ? undefined : JSON.stringify(wire.extensions),
  };
}

/**
 * Whether a document may contain a mutation. Deliberately crude (no parser in the browser bundle):
 * the word `mutation` anywhere outside comments counts, so a false answer is always right and a
 * true one at worst forgoes a retry.
 */
export function mayBeMutation(document: string): boolean {
  return /\bmutation\b/.test(document.replace(/#[^\n\r]*/g, ''));
}
