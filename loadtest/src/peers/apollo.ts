import { readFileSync } from 'node:fs';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';

/**
 * A peer for the gateway comparison (`npm run bench`): a plain @apollo/gateway behind Apollo
 * Server 5's standalone server, as its documentation sets one up, plus what any fair setup needs:
 * the client's `authorization` forwarded to the subgraphs (which verify it), and nothing sent to
 * Apollo (APOLLO_TELEMETRY_DISABLED, usage and schema reporting off).
 * Its subgraph fetcher (`APOLLO_FETCHER`): `default` is @apollo/gateway's own — make-fetch-happen
 * with keep-alive sockets and retries off, what its documentation and most of its users run;
 * `fetch` is Node's global fetch (undici), which an earlier version of this peer passed. The bench
 * runs both in the same rounds (`BENCH_APOLLO_FETCH=0`: the default alone) and judges its goal
 * against the cheaper (docs/benchmarks/cross-check.md, "Plain Apollo's fetcher").
 * The supergraph's `@link(… authenticated / requiresScopes …, for: SECURITY)` lose their purpose
 * argument, which @apollo/gateway refuses (it enforces neither; the subgraphs do).
 * Environment: PORT, SUPERGRAPH_FILE, APOLLO_FETCHER.
 */
process.env.APOLLO_TELEMETRY_DISABLED = 'true';
const port = Number(process.env.PORT);
const fetcherName = process.env.APOLLO_FETCHER ?? 'default';
if (fetcherName !== 'default' && fetcherName !== 'fetch') throw new Error(`APOLLO_FETCHER must be default or fetch, not ${fetcherName}`);
const globalFetch = fetcherName === 'fetch';
const supergraphSdl = readFileSync(process.env.SUPERGRAPH_FILE!, 'utf8').replace(
  /(@link\(url: "https:\/\/specs\.apollo\.dev\/(?:authenticated|requiresScopes)\/[^"]*"), for: SECURITY\)/g,
  '$1)',
);

interface Context {
  authorization?: string | undefined;
}

class Subgraph extends RemoteGraphQLDataSource<Context> {
  override willSendRequest({ request, context }: Parameters<NonNullable<RemoteGraphQLDataSource<Context>['willSendRequest']>>[0]): void {
    // A health check's context is a plain record (typed `any`); a request's is ours.
    const { authorization } = context as Context;
    if (authorization) request.http?.headers.set('authorization', authorization);
  }
}

async function main(): Promise<void> {
  const server = new ApolloServer<Context>({
    gateway: new ApolloGateway({
      supergraphSdl,
      buildService: ({ url }) =>
        new Subgraph({ url, ...(globalFetch ? { fetcher: fetch as unknown as RemoteGraphQLDataSource['fetcher'] } : {}) }),
    }),
    plugins: [
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      ApolloServerPluginLandingPageDisabled(),
    ],
  });
  const { url } = await startStandaloneServer(server, {
    listen: { port, host: '127.0.0.1' },
    context: ({ req }) => Promise.resolve({ authorization: req.headers.authorization }),
  });
  process.stdout.write(`plain @apollo/gateway (fetcher: ${fetcherName}) listening at ${url}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`apollo peer failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
