import type { ApolloServerPlugin, GraphQLRequestContextWillSendResponse, GraphQLRequestListener } from '@apollo/server';
import type { ServiceIdentity } from '@halo/kit/auth';
import type { Logger } from '@halo/kit/logging';
import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { observedFromApollo, type OperationObserver } from '../observability';
import { clientCache, type ClientHeaders } from './clients';
import { UsageRecorder } from './recorder';
import { createUsageSender, type ReportStats } from './reporter';

export {
  CLIENT_HEADERS,
  clientCache,
  clientHeadersOf,
  clientNameOf,
  clientVersionOf,
  UNKNOWN_CLIENT,
  type ClientHeaders,
  type UsageClient,
} from './clients';
export { coordinatesOf, operationUsage, type OperationUsage } from './coordinates';
export { UsageRecorder, type UsageReport } from './recorder';

export interface UsageOptions {
  /** The registry's HTTP base. */
  url: string;
  identity: ServiceIdentity;
  gatewayId: string;
  /** The registry's composition served now (null: the boot files), sent with each batch. */
  served: () => number | null;
  flushMs: number;
  maxOperations: number;
  logger: Logger;
}

export interface UsageReporting {
  /** The Apollo Server plugin that counts executed operations. */
  plugin<C extends object>(): ApolloServerPlugin<C>;
  /** What that plugin records of an answered operation (the lean path calls it too, ADR 0016). */
  observe: OperationObserver;
  /** One operation that came another way (a subscription over WebSocket or SSE), with what its connection declared. */
  record(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation: OperationDefinitionNode,
    client: ClientHeaders,
    variables?: Readonly<Record<string, unknown>> | null,
    cost?: number,
  ): void;
  /** Cumulative counters (metrics). */
  stats(): { dropped: number; reports: ReportStats };
  /** Sends what was counted now (tests; the timer does it every `flushMs`). */
  flush(): Promise<void>;
  /** Stops the timer and sends what is left (best effort, bounded by the send timeout). */
  stop(): Promise<void>;
}

/**
 * Field usage, recorded off the request path and sent to the registry (docs/registry.md): which
 * schema coordinates each executed operation uses, per operation signature, client (name and
 * version) and hour, batched every `flushMs`. The registry's checks use it to tell a field nobody
 * asked for from one clients depend on. Fails open: the registry away changes no answer.
 */
export function createUsageReporting(opts: UsageOptions): UsageReporting {
  const recorder = new UsageRecorder(opts.maxOperations);
  const sender = createUsageSender(recorder, {
    url: opts.url,
    identity: opts.identity,
    gatewayId: opts.gatewayId,
    served: opts.served,
    maxReports: opts.maxOperations,
    logger: opts.logger,
  });
  const clientOf = clientCache();
  // One listener object for every request: no closure per request.
  /** One answered operation: an executed one (it has `data`) is recorded. */
  const observe: OperationObserver = ({ schema, document, operation, result, header, variables, cost }) => {
    if (!document || !operation) return;
    // Refused before execution (limits, auth): a request error has no `data` (GraphQL spec).
    if (!('data' in result)) return;
    recorder.record(
      schema,
      document,
      operation,
      clientOf(
        header('apollographql-client-name'),
        header('x-client-name'),
        header('apollographql-client-version'),
        header('x-client-version'),
      ),
      Date.now(),
      variables,
      cost,
    );
  };
  const listener: GraphQLRequestListener<object> = {
    // eslint-disable-next-line @typescript-eslint/require-await -- Apollo Server types the hook as returning a promise; a throw rejects.
    async willSendResponse(context: GraphQLRequestContextWillSendResponse<object>) {
      observe(observedFromApollo(context, false, 0n));
    },
  };
  let flushing: Promise<void> | null = null;
  const flush = () =>
    (flushing ??= sender.flush().finally(() => {
      flushing = null;
    }));
  const timer = setInterval(() => void flush(), opts.flushMs).unref();
  return {
    plugin: () => ({ requestDidStart: () => Promise.resolve(listener) }),
    observe,
    record: (schema, document, operation, client, variables, cost) =>
      recorder.record(
        schema,
        document,
        operation,
        clientOf(
          client['apollographql-client-name'],
          client['x-client-name'],
          client['apollographql-client-version'],
          client['x-client-version'],
        ),
        Date.now(),
        variables,
        cost,
      ),
    stats: () => ({ dropped: recorder.dropped, reports: sender.stats() }),
    flush: async () => {
      await flushing;
      await flush();
    },
    async stop() {
      clearInterval(timer);
      await flushing;
      await flush();
    },
  };
}
