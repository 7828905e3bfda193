import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServer, BaseContext, HTTPGraphQLResponse } from '@apollo/server';
import type { Counter } from 'prom-client';
import { load } from '../process/lazy';

/** What the fallback needs of the lean path: the subgraph's Apollo Server, its context, the counter of who answered. */
export interface ApolloFallback<C extends BaseContext> {
  readonly apollo: ApolloServer<C>;
  readonly context: (req: IncomingMessage) => Promise<C>;
  readonly answered: Counter<'by'> | undefined;
}

/**
 * What the lean path leaves to Apollo (a body that is not one plain operation, a document that
 * does not parse or validate, a refused caller, variables that do not coerce…): Apollo Server's
 * own answer, written as @as-integrations/express5 writes it.
 */
export async function viaApollo<C extends BaseContext>(
  lean: ApolloFallback<C>,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  lean.answered?.inc({ by: 'apollo' });
  const { HeaderMap } = load.apolloServer();
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  const response: HTTPGraphQLResponse = await lean.apollo.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: 'POST', headers, search: '', body },
    context: () => lean.context(req),
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
