import { OperationTypeNode } from 'graphql';
import { RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import { REQUEST_ID_HEADER, toGraphQLError, unavailable, type Logger } from '@halo/kit';
import type { GraphQLContext } from './context';

/**
 * A subgraph request that may share an identical in-flight one: it belongs to an incoming query
 * (a mutation's plan reads what the mutation just wrote, so none of its fetches share, not even
 * its entity fetches) and is itself a query. The credentials are part of the fetch's identity
 * (src/graphql/dedupe.ts), so sharing never crosses callers.
 */
function isShareable(options: GraphQLDataSourceProcessOptions<GraphQLContext>): boolean {
  return (
    // Only an incoming operation's fetch has one (not a health check or schema load).
    'incomingRequestContext' in options &&
    options.incomingRequestContext.operation?.operation === OperationTypeNode.QUERY &&
    options.request.query !== undefined &&
    /^\s*(?:query\b|\{)/.test(options.request.query)
  );
}

/**
 * One subgraph: the gateway's keep-alive fetcher (undici's dispatcher with a pool per subgraph,
 * src/graphql/http-fetcher.ts: Apollo's default fetcher costs about 1.5× the CPU of Node's global
 * fetch, STACK-NOTES.md, and the global fetch's WHATWG streams more than one handler object and one
 * string read), the caller's credentials and the request id forwarded. With
 * a deduping fetcher, shareable requests go through a twin that uses it, the rest (mutations,
 * health checks) through the plain one: RemoteGraphQLDataSource's fetch path is private, and the
 * fetcher alone cannot tell a query's fetch from a mutation's.
 */
export class SubgraphDataSource extends RemoteGraphQLDataSource<GraphQLContext> {
  private readonly shared: SubgraphDataSource | null;

  constructor(
    private readonly subgraph: string,
    url: string,
    private readonly logger: Logger,
    fetcher: RemoteGraphQLDataSource['fetcher'],
    sharedFetcher?: RemoteGraphQLDataSource['fetcher'],
  ) {
    super({ url, fetcher });
    this.shared = sharedFetcher ? new SubgraphDataSource(subgraph, url, logger, sharedFetcher) : null;
  }

  override process(options: GraphQLDataSourceProcessOptions<GraphQLContext>): ReturnType<RemoteGraphQLDataSource['process']> {
    return this.shared && isShareable(options) ? this.shared.process(options) : super.process(options);
  }

  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<GraphQLContext>): void {
    const ctx = context as Partial<GraphQLContext>;
    const headers = request.http?.headers;
    if (!headers) return;
    if (ctx.authorization) headers.set('authorization', ctx.authorization);
    const requestId = ctx.requestId;
    if (requestId !== undefined) headers.set(REQUEST_ID_HEADER, requestId);
  }

  /**
   * No response at all (refused, reset, DNS): the client learns the service is unavailable, the
   * log learns why. The default error would show the subgraph's internal URL.
   */
  override didEncounterError(error: Error, _req: unknown, response?: unknown, context?: Partial<GraphQLContext>): void {
    if (response !== undefined) throw error;
    const cause = (error as { cause?: { code?: string } }).cause;
    this.logger.error(
      { requestId: context?.requestId, subgraph: this.subgraph, code: cause?.code, message: error.message },
      'subgraph unreachable',
    );
    throw toGraphQLError(unavailable());
  }
}
