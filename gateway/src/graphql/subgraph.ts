import { GraphQLError, OperationTypeNode } from 'graphql';
import type { GraphQLDataSource, GraphQLDataSourceProcessOptions } from '@apollo/gateway';
// RemoteGraphQLDataSource's own parser (the package has no exports map; gateway/test/subgraph-source.test.ts pins the result).
import { parseCacheControlHeader } from '@apollo/gateway/dist/datasources/parseCacheControlHeader';
import { unavailable } from '@halo/kit/errors';
import { toGraphQLError } from '@halo/kit/graphql';
import { REQUEST_ID_HEADER, type Logger } from '@halo/kit/logging';
import type { GraphQLContext } from './context';
import type { Fetcher, FetcherRequestInit } from './http-fetcher';

type Options = GraphQLDataSourceProcessOptions<GraphQLContext>;
type SubgraphResponse = Awaited<ReturnType<GraphQLDataSource<GraphQLContext>['process']>>;
type FetcherResponse = Awaited<ReturnType<Fetcher>>;
/** Apollo Server's cache policy of the incoming operation (typed `any` by the gateway interface). */
interface CachePolicy {
  restrict(hint: { maxAge?: number; scope?: 'PUBLIC' | 'PRIVATE' }): void;
}

/**
 * A subgraph request that may share an identical in-flight one: it belongs to an incoming query
 * (a mutation's plan reads what the mutation just wrote, so none of its fetches share, not even
 * its entity fetches) and is itself a query. The credentials are part of the fetch's identity
 * (src/graphql/dedupe.ts), so sharing never crosses callers.
 */
function isShareable(options: Options): boolean {
  return (
    // Only an incoming operation's fetch has one (not a health check or schema load).
    'incomingRequestContext' in options &&
    options.incomingRequestContext.operation?.operation === OperationTypeNode.QUERY &&
    options.request.query !== undefined &&
    /^\s*(?:query\b|\{)/.test(options.request.query)
  );
}

/**
 * One subgraph, behind @apollo/gateway's GraphQLDataSource interface: the gateway's keep-alive
 * fetcher (undici's dispatcher with a pool per subgraph, src/graphql/http-fetcher.ts), the caller's
 * credentials and the request id forwarded, shareable requests (queries) through the deduping
 * fetcher when there is one, the rest (mutations, health checks) through the plain one.
 *
 * What RemoteGraphQLDataSource (@apollo/gateway 2.14) does, minus what costs per subgraph fetch
 * and serves nothing here: it builds a node-fetch `Headers` for every request, copies it into a
 * plain object, and builds a node-fetch `Request` that only its hooks would read (WHATWG header
 * validation and URL parsing included, per fetch). Kept as it does: the body
 * (`{query, variables, operationName}`), `Content-Type`, any header the executor set, a subgraph
 * answer that is not 2xx as `<status>: <statusText>` with the answer under `extensions.response`
 * (401 UNAUTHENTICATED, 403 FORBIDDEN), a JSON body required, the subgraph's `Cache-Control`
 * restricting the operation's cache policy. No automatic persisted queries to subgraphs (Halo
 * never switched them on).
 */
export class SubgraphDataSource implements GraphQLDataSource<GraphQLContext> {
  constructor(
    private readonly subgraph: string,
    readonly url: string,
    private readonly logger: Logger,
    private readonly fetcher: Fetcher,
    private readonly sharedFetcher?: Fetcher,
  ) {}

  async process(options: Options): Promise<SubgraphResponse> {
    const { request } = options;
    const { query, http, ...rest } = request;
    if (!query) throw new Error('Missing query');
    const ctx = options.context as Partial<GraphQLContext>;
    // The lean path's direct fetch, made already (src/graphql/direct.ts): this is the executor's fetch of it.
    const prefetched = ctx.prefetched;
    if (prefetched?.query === query) {
      ctx.prefetched = undefined;
      if ('error' in prefetched) throw prefetched.error;
      return prefetched.response;
    }
    const headers: Record<string, string> = {};
    if (http?.headers) for (const [name, value] of http.headers) headers[name.toLowerCase()] = value;
    headers['content-type'] = 'application/json';
    if (ctx.authorization) headers.authorization = ctx.authorization;
    if (ctx.requestId !== undefined) headers[REQUEST_ID_HEADER] = ctx.requestId;
    const init: FetcherRequestInit = { method: 'POST', headers, body: JSON.stringify({ query, ...rest }) };
    const fetcher = this.sharedFetcher && isShareable(options) ? this.sharedFetcher : this.fetcher;

    let response: FetcherResponse;
    try {
      response = await fetcher(this.url, init);
    } catch (error) {
      throw this.unreachable(error as Error, ctx);
    }
    if (!response.ok) throw await errorFromResponse(response);
    const body = await parseBody(response);
    if (typeof body !== 'object' || body === null) throw new Error(`Expected JSON response body, but received: ${String(body)}`);
    const policy = ('incomingRequestContext' in options ? options.incomingRequestContext.overallCachePolicy : null) as CachePolicy | null;
    if (policy && 'restrict' in policy) {
      const cc = parseCacheControlHeader(response.headers.get('cache-control'));
      const maxAge = cc['max-age'];
      policy.restrict({
        maxAge: typeof maxAge === 'string' && /^[0-9]+$/.test(maxAge) ? +maxAge : 0,
        ...(cc.private === true ? { scope: 'PRIVATE' as const } : {}),
        ...(cc.public === true ? { scope: 'PUBLIC' as const } : {}),
      });
    }
    return { ...(body as SubgraphResponse), http: response };
  }

  /**
   * No response at all (refused, reset, DNS): the client learns the service is unavailable, the
   * log learns why. The default error would show the subgraph's internal URL.
   */
  private unreachable(error: Error, context: Partial<GraphQLContext>): GraphQLError {
    const cause = (error as { cause?: { code?: string } }).cause;
    this.logger.error(
      { requestId: context.requestId, subgraph: this.subgraph, code: cause?.code, message: error.message },
      'subgraph unreachable',
    );
    return toGraphQLError(unavailable());
  }
}

function parseBody(response: FetcherResponse): Promise<unknown> {
  const type = response.headers.get('content-type');
  return type && (type.startsWith('application/json') || type.startsWith('application/graphql-response+json'))
    ? response.json()
    : response.text();
}

async function errorFromResponse(response: FetcherResponse): Promise<GraphQLError> {
  const body = await parseBody(response);
  const code = response.status === 401 ? 'UNAUTHENTICATED' : response.status === 403 ? 'FORBIDDEN' : undefined;
  return new GraphQLError(`${response.status}: ${response.statusText}`, {
    extensions: {
      response: { url: response.url, status: response.status, statusText: response.statusText, body },
      ...(code ? { code } : {}),
    },
  });
}
