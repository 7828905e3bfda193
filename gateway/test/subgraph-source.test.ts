import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GraphQLError } from 'graphql';
import type { Logger } from '@halo/kit/logging';
import type { GraphQLContext } from '../src/graphql/context';
import { createHttpFetcher, type Fetcher, type HttpFetcher } from '../src/graphql/http-fetcher';
import { SubgraphDataSource } from '../src/graphql/subgraph';

/** SubgraphDataSource against a real local subgraph: what it sends, and what Apollo gets back. */
describe('SubgraphDataSource', () => {
  let server: Server;
  let base: string;
  let fetcher: HttpFetcher;
  const seen: { url: string; headers: IncomingMessage['headers']; body: string }[] = [];
  const errors: unknown[] = [];
  const logger = { error: (fields: unknown) => errors.push(fields) } as unknown as Logger;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        seen.push({ url: req.url!, headers: req.headers, body });
        if (req.url === '/busy') {
          res.writeHead(503, 'Busy', { 'content-type': 'application/json' });
          return void res.end('{"error":"busy"}');
        }
        if (req.url === '/denied') {
          res.writeHead(401, 'Unauthorized', { 'content-type': 'text/plain' });
          return void res.end('no');
        }
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'private, max-age=30' });
        res.end('{"data":{"me":{"id":"1"}}}');
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    fetcher = createHttpFetcher();
  });
  afterAll(async () => {
    await fetcher.close();
    await new Promise((ok) => server.close(ok));
  });
  beforeEach(() => {
    seen.length = 0;
    errors.length = 0;
  });

  const hints: unknown[] = [];
  const options = (context: Partial<GraphQLContext>) =>
    ({
      kind: 'incoming operation',
      request: { query: 'query($id: ID!){ me(id: $id) { id } }', variables: { id: '1' }, operationName: 'Me' },
      incomingRequestContext: { operation: { operation: 'query' }, overallCachePolicy: { restrict: (hint: unknown) => hints.push(hint) } },
      context,
    }) as unknown as GraphQLDataSourceProcessOptions<GraphQLContext>;

  it("sends the operation as JSON with the caller's credentials and request id; the subgraph's Cache-Control restricts the policy", async () => {
    hints.length = 0;
    const source = new SubgraphDataSource('auth', `${base}/graphql`, logger, fetcher);
    const response = await source.process(options({ authorization: 'Bearer t', requestId: 'req-1' }));
    expect(response.data).toEqual({ me: { id: '1' } });
    expect(seen).toHaveLength(1);
    expect(JSON.parse(seen[0]!.body)).toEqual({
      query: 'query($id: ID!){ me(id: $id) { id } }',
      variables: { id: '1' },
      operationName: 'Me',
    });
    expect(seen[0]!.headers).toMatchObject({ 'content-type': 'application/json', authorization: 'Bearer t', 'x-request-id': 'req-1' });
    expect(hints).toEqual([{ maxAge: 30, scope: 'PRIVATE' }]);
  });

  it('sends no credentials for an anonymous caller', async () => {
    await new SubgraphDataSource('auth', `${base}/graphql`, logger, fetcher).process(options({}));
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });

  it('turns an answer that is not 2xx into "<status>: <statusText>" with the answer under extensions.response', async () => {
    const busy = new SubgraphDataSource('auth', `${base}/busy`, logger, fetcher).process(options({}));
    await expect(busy).rejects.toMatchObject({
      message: '503: Busy',
      extensions: { response: { status: 503, statusText: 'Busy', body: { error: 'busy' } } },
    });
    const denied = await new SubgraphDataSource('auth', `${base}/denied`, logger, fetcher)
      .process(options({}))
      .catch((e: GraphQLError) => e);
    expect((denied as GraphQLError).extensions).toMatchObject({ code: 'UNAUTHENTICATED', response: { body: 'no' } });
  });

  it('answers a subgraph that cannot be reached as unavailable, without its URL, and logs why', async () => {
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    const error = await new SubgraphDataSource('auth', `http://127.0.0.1:${port}/graphql`, logger, fetcher)
      .process(options({ requestId: 'req-2' }))
      .catch((e: GraphQLError) => e);
    expect((error as GraphQLError).extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect((error as GraphQLError).message).not.toContain(String(port));
    expect(errors).toEqual([expect.objectContaining({ requestId: 'req-2', subgraph: 'auth', code: 'ECONNREFUSED' })]);
  });

  it('sends shareable queries through the deduping fetcher and mutations through the plain one', async () => {
    const used: string[] = [];
    const tagged =
      (tag: string): Fetcher =>
      (url, init) => {
        used.push(tag);
        return fetcher(url, init);
      };
    const source = new SubgraphDataSource('auth', `${base}/graphql`, logger, tagged('plain'), tagged('shared'));
    await source.process(options({}));
    const mutation = options({});
    (mutation as unknown as { incomingRequestContext: { operation: { operation: string } } }).incomingRequestContext.operation.operation =
      'mutation';
    mutation.request.query = 'mutation { logout }';
    await source.process(mutation);
    expect(used).toEqual(['shared', 'plain']);
  });
  describe('an answer the lean path fetched already (ADR 0019)', () => {
    const QUERY = 'query($id: ID!){ me(id: $id) { id } }';
    it('is handed to the executor once, without fetching again', async () => {
      const source = new SubgraphDataSource('auth', `${base}/graphql`, logger, fetcher);
      const context: Partial<GraphQLContext> = {
        prefetched: { query: QUERY, response: { data: { me: null }, errors: [{ message: 'gone' }] } },
      };
      expect(await source.process(options(context))).toEqual({ data: { me: null }, errors: [{ message: 'gone' }] });
      expect(seen).toHaveLength(0);
      expect(context.prefetched).toBeUndefined();
      // The next fetch of the same operation goes to the subgraph.
      expect((await source.process(options(context))).data).toEqual({ me: { id: '1' } });
      expect(seen).toHaveLength(1);
    });

    it('throws what the fetch threw', async () => {
      const failure = new Error('unreachable');
      const context: Partial<GraphQLContext> = { prefetched: { query: QUERY, error: failure } };
      await expect(new SubgraphDataSource('auth', `${base}/graphql`, logger, fetcher).process(options(context))).rejects.toBe(failure);
      expect(seen).toHaveLength(0);
    });

    it('is not taken by a fetch of another operation', async () => {
      const context: Partial<GraphQLContext> = { prefetched: { query: '{ other }', response: { data: { other: 1 } } } };
      expect((await new SubgraphDataSource('auth', `${base}/graphql`, logger, fetcher).process(options(context))).data).toEqual({
        me: { id: '1' },
      });
      expect(seen).toHaveLength(1);
      expect(context.prefetched).toBeDefined();
    });
  });
});
