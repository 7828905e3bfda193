import type { Client, NetworkError } from 'graphql-sse';
import { GraphQLRequestError, SubscriptionClosedError, type GraphQLErrorEntry } from './errors.js';
import type { GraphQLOperation, GraphQLResult } from './graphql.js';
import type { Sleep } from './retry.js';
import type { Session } from './session.js';
import {
  backoff,
  graphQLErrors,
  iterateSubscription,
  TRANSIENT_CODES,
  type ReconnectOptions,
  type SubscriptionSink,
  type SubscriptionTransport,
} from './subscriptions.js';

export interface SseSettings {
  /** Default: the base URL and `/graphql/stream`. */
  url: string;
  fetch: typeof fetch;
  reconnect: ReconnectOptions;
  /** Sent with every stream request (the client's own `headers`, and its name and version: ./client-info.ts). */
  headers: Record<string, string>;
}

/**
 * Subscriptions over Server-Sent Events (the graphql-sse protocol, distinct connections mode, at
 * the gateway's `/graphql/stream`) with graphql-sse's own client: one HTTP request per
 * subscription, for places where a WebSocket cannot go (some proxies, serverless edges). It
 * behaves as the WebSocket transport does:
 *
 * - the token (or `X-API-Key`) goes in the `Authorization` header, read at each (re)connection;
 *   a 401 (a refused or expired token) renews it once through the shared single-flight refresh,
 *   then subscribes again; a refused renewal ends the subscription with SignedOutError;
 * - a refused operation (UNAUTHENTICATED, MAX_DEPTH_LIMIT…: the gateway streams one result with
 *   `errors` and no `data`) ends it with GraphQLRequestError; a passing cause (UNAVAILABLE,
 *   SUBSCRIPTION_SCHEMA_RELOAD) and a dropped stream subscribe again after the reconnect backoff;
 * - another refused request (400, 406…) ends it with GraphQLRequestError carrying the status.
 *
 * graphql-sse is loaded when the first subscription starts: it needs the `graphql` package.
 */
export class SseSubscriptions implements SubscriptionTransport {
  private client: Promise<Client> | null = null;
  /** Open subscriptions' stop functions: close() ends them all. */
  private readonly open = new Set<() => void>();

  constructor(
    private readonly settings: SseSettings,
    private readonly session: Session,
    private readonly apiKey: string | undefined,
    private readonly sleep: Sleep,
  ) {}

  subscribe<TData>(op: GraphQLOperation<unknown>, sink: SubscriptionSink<TData>): () => void {
    let disposed = false;
    let stop: () => void = () => undefined;
    let renewed = false;
    let retries = 0;

    const start = async () => {
      const client = await this.ensureClient();
      if (disposed) return;
      const generation = this.session.generation;
      let refused: GraphQLErrorEntry[] | null = null;
      stop = client.subscribe<TData>(
        {
          query: op.query,
          ...(op.variables ? { variables: op.variables as Record<string, unknown> } : {}),
          ...(op.operationName ? { operationName: op.operationName } : {}),
        },
        {
          next: (value) => {
            // No `data`: the operation was refused (what a graphql-ws `error` frame says).
            const errors = 'data' in value ? null : graphQLErrors(value.errors);
            if (errors) refused = errors;
            else {
              retries = 0;
              sink.next(value as GraphQLResult<TData>);
            }
          },
          error: (err) => void onError(err, generation),
          complete: () => void (refused ? onRefused(refused) : end(() => sink.complete?.())),
        },
      );
    };
    const end = (how: () => void) => {
      if (disposed) return;
      disposed = true;
      this.open.delete(unsubscribe);
      how();
    };
    const again = async () => {
      await this.sleep(backoff(this.settings.reconnect, retries++));
      void start().catch((err: unknown) => end(() => sink.error(err)));
    };
    const onRefused = async (errors: GraphQLErrorEntry[]) => {
      if (errors.every((e) => TRANSIENT_CODES.has(e.extensions?.code ?? '')) && retries < this.settings.reconnect.attempts) {
        return again();
      }
      end(() => sink.error(new GraphQLRequestError(errors, null, null)));
    };
    const onError = async (err: unknown, generation: number) => {
      if (disposed) return;
      const response = (err as NetworkError<Response>).response;
      if (response?.status === 401 && !this.apiKey && !renewed) {
        renewed = true;
        try {
          await this.session.renewAfterUnauthorized(generation);
        } catch (renewFailed) {
          return end(() => sink.error(renewFailed));
        }
        return void start().catch((e: unknown) => end(() => sink.error(e)));
      }
      if (response && response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
        const errors = await response.json().then(
          (body: unknown) => graphQLErrors((body as { errors?: unknown } | null)?.errors),
          () => null,
        );
        return end(() => sink.error(new GraphQLRequestError(errors ?? [{ message: `HTTP ${response.status}` }], null, response.status)));
      }
      // A dropped stream, a 5xx, a gateway restarting: again, with the backoff, as graphql-ws does.
      if (retries < this.settings.reconnect.attempts) return again();
      end(() => sink.error(new SubscriptionClosedError(null, err instanceof Error ? err.message : 'connection error', err)));
    };

    const unsubscribe = () => {
      if (disposed) return;
      disposed = true;
      this.open.delete(unsubscribe);
      stop();
    };
    this.open.add(unsubscribe);
    void start().catch((err: unknown) => end(() => sink.error(err)));
    return unsubscribe;
  }

  iterate<TData>(op: GraphQLOperation<unknown>): AsyncIterableIterator<GraphQLResult<TData>> {
    return iterateSubscription<TData>((sink) => this.subscribe<TData>(op, sink));
  }

  /** Ends every subscription's stream. */
  async close(): Promise<void> {
    for (const stop of [...this.open]) stop();
    const client = this.client;
    this.client = null;
    (await client)?.dispose();
  }

  private ensureClient(): Promise<Client> {
    this.client ??= import('graphql-sse').then(({ createClient }) =>
      createClient({
        url: this.settings.url,
        fetchFn: this.settings.fetch,
        // Read at every request: a renewed token is used from the next stream on.
        headers: () => {
          const token = this.session.accessToken;
          if (this.apiKey) return { ...this.settings.headers, 'x-api-key': this.apiKey };
          return token ? { ...this.settings.headers, authorization: `Bearer ${token}` } : { ...this.settings.headers };
        },
        // The wrapper above decides what is retried (graphql-sse would retry a 401 too).
        retryAttempts: 0,
      }),
    );
    return this.client;
  }
}
