import { createClient, type Client } from 'graphql-ws/client';
import { GraphQLRequestError, SubscriptionClosedError, type GraphQLErrorEntry } from './errors.js';
import type { GraphQLOperation, GraphQLResult } from './graphql.js';
import type { Sleep } from './retry.js';
import type { Session } from './session.js';

export interface ReconnectOptions {
  /** Consecutive failed connection attempts before giving up (graphql-ws `retryAttempts`); default 10. */
  attempts: number;
  /** First wait; doubles per failed attempt (default 1 s). */
  baseDelayMs: number;
  /** Cap of the wait (default 30 s). */
  maxDelayMs: number;
}

export interface SubscriptionSettings {
  /** Default: the base URL with ws(s):// and the GraphQL path. */
  url: string;
  /**
   * A WebSocket class: browsers and Node ≥ 22 have one (`globalThis.WebSocket`); on Node 20 pass
   * the `ws` package's default export.
   */
  webSocketImpl: unknown;
  reconnect: ReconnectOptions;
  /** Ping interval in ms (graphql-ws `keepAlive`); 0 = off (default 0). */
  keepAliveMs: number;
  /** Each acknowledged connection; `reconnected` is true when it follows a lost one. */
  onConnected?: (reconnected: boolean) => void;
  /** Each closed socket (a CloseEvent-like `{ code, reason }`), before any reconnect. */
  onClosed?: (event: unknown) => void;
  /**
   * The client's name and version (./client-info.ts), sent in `connection_init`: a browser cannot
   * set headers on a WebSocket upgrade, and the gateway reads them there first.
   */
  clientInfo?: Record<string, string>;
}

export interface SubscriptionSink<TData> {
  /** Each event (`data`, and `errors` when that one event failed). */
  next(result: GraphQLResult<TData>): void;
  /**
   * The subscription ended with an error: GraphQLRequestError (an `error` frame, e.g.
   * UNAUTHENTICATED), SignedOutError (the token could not be renewed), SubscriptionClosedError
   * (the connection could not be re-established).
   */
  error(err: unknown): void;
  complete?(): void;
}

/** What GraphQLClient subscribes through: graphql-ws (this file) or graphql-sse (./sse-subscriptions.ts). */
export interface SubscriptionTransport {
  subscribe<TData>(op: GraphQLOperation<unknown>, sink: SubscriptionSink<TData>): () => void;
  iterate<TData>(op: GraphQLOperation<unknown>): AsyncIterableIterator<GraphQLResult<TData>>;
  close(): Promise<void>;
}

/**
 * What the client gives a transport it does not build in itself: the settings the options chose
 * and the client's own session. Built by HaloClient; apps only pass the factory along.
 */
export interface TransportContext {
  /** `subscriptions.url` when given. */
  url: string | undefined;
  /** The client's GraphQL endpoint over HTTP(S) (the base URL and the GraphQL path). */
  graphqlUrl: string;
  fetch: typeof fetch;
  reconnect: ReconnectOptions;
  /** The client's `headers`, and its name and version (./client-info.ts). */
  headers: Record<string, string>;
  session: Session;
  apiKey: string | undefined;
  sleep: Sleep;
}

/**
 * A subscription transport outside the main entry, given as `subscriptions.transport`:
 * `sseTransport` of `@halo/client/sse`. It lives behind its own entry so that an app on the
 * WebSocket transport bundles nothing of graphql-sse (nor the `graphql` package it loads).
 */
export interface SubscriptionTransportFactory {
  readonly name: string;
  create(context: TransportContext): SubscriptionTransport;
}

/** The gateway's close code for a refused or expired token (docs/api/graphql.md, README "Subscriptions"). */
export const CLOSE_UNAUTHORIZED = 4401;

/**
 * `error` frame codes that end a subscription for a passing reason; the README says to subscribe
 * again (chat restarting, a new supergraph, a subscriber that fell too far behind).
 */
export const TRANSIENT_CODES = new Set(['UNAVAILABLE', 'SERVICE_UNAVAILABLE', 'SUBSCRIPTION_SCHEMA_RELOAD']);

/**
 * Subscriptions over the `graphql-transport-ws` protocol with graphql-ws's own client, which
 * already reconnects after a dropped socket (a gateway restart, 1001 on shutdown, a network
 * failure) and resubscribes every active subscription. This wrapper adds what it cannot know:
 *
 * - the token in `connection_init` is read at each (re)connection, so a renewed token is used;
 * - a close with 4401 (the token was refused or expired while connected; graphql-ws treats it as
 *   fatal) renews the token once through the shared single-flight refresh, then subscribes again;
 *   a refused renewal ends the subscription with SignedOutError;
 * - an `error` frame with a passing cause (UNAVAILABLE, SUBSCRIPTION_SCHEMA_RELOAD) subscribes
 *   again after the reconnect backoff.
 *
 * Delivery is at most once (docs/api/graphql.md "Chat") unless the caller passes `resume`
 * (./resume.ts), which keeps the last delivered id in the variables this class resends.
 */
export class Subscriptions implements SubscriptionTransport {
  private client: Client | null = null;
  /** Generation of the token the current socket was opened with (src/session.ts). */
  private socketGeneration = -1;
  private socketHadToken = false;
  /** Count of acknowledged connections: tells a fresh 4401 from a repeated refusal. */
  private connections = 0;

  constructor(
    private readonly settings: SubscriptionSettings,
    private readonly session: Session,
    private readonly apiKey: string | undefined,
    private readonly sleep: Sleep,
  ) {}

  /** Subscribes; returns the function that unsubscribes. */
  subscribe<TData>(op: GraphQLOperation<unknown>, sink: SubscriptionSink<TData>): () => void {
    let disposed = false;
    let stop: () => void = () => undefined;
    let renewals = 0;
    let connectionsAtRenewal = -1;
    let transientRetries = 0;

    const start = () => {
      if (disposed) return;
      stop = this.ensureClient().subscribe<TData>(
        {
          query: op.query,
          ...(op.variables ? { variables: op.variables as Record<string, unknown> } : {}),
          ...(op.operationName ? { operationName: op.operationName } : {}),
        },
        {
          next: (value) => {
            transientRetries = 0;
            sink.next(value as GraphQLResult<TData>);
          },
          error: (err) => void onError(err),
          complete: () => sink.complete?.(),
        },
      );
    };

    const onError = async (err: unknown) => {
      if (disposed) return;
      if (isCloseEvent(err) && err.code === CLOSE_UNAUTHORIZED && this.canRenew()) {
        // Renew once per acknowledged connection: a 4401 right after a renewal means the new token
        // is refused too, and looping would only hammer auth.
        if (renewals > 0 && connectionsAtRenewal === this.connections) {
          sink.error(new SubscriptionClosedError(err.code, err.reason, err));
          return;
        }
        renewals++;
        connectionsAtRenewal = this.connections;
        try {
          await this.session.renewAfterUnauthorized(this.socketGeneration);
        } catch (renewFailed) {
          if (!disposed) sink.error(renewFailed);
          return;
        }
        start();
        return;
      }
      const errors = graphQLErrors(err);
      if (
        errors &&
        errors.every((e) => TRANSIENT_CODES.has(e.extensions?.code ?? '')) &&
        transientRetries < this.settings.reconnect.attempts
      ) {
        await this.sleep(this.backoff(transientRetries++));
        start();
        return;
      }
      if (disposed) return;
      if (errors) sink.error(new GraphQLRequestError(errors, null, null));
      else if (isCloseEvent(err)) sink.error(new SubscriptionClosedError(err.code, err.reason, err));
      else sink.error(new SubscriptionClosedError(null, err instanceof Error ? err.message : 'connection error', err));
    };

    start();
    return () => {
      if (disposed) return;
      disposed = true;
      stop();
    };
  }

  iterate<TData>(op: GraphQLOperation<unknown>): AsyncIterableIterator<GraphQLResult<TData>> {
    return iterateSubscription<TData>((sink) => this.subscribe<TData>(op, sink));
  }

  /** Closes the socket and ends every subscription. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.dispose();
  }

  private canRenew(): boolean {
    return !this.apiKey && this.socketHadToken;
  }

  private backoff(retries: number): number {
    return backoff(this.settings.reconnect, retries);
  }

  private ensureClient(): Client {
    if (this.client) return this.client;
    const impl = this.settings.webSocketImpl ?? (globalThis as { WebSocket?: unknown }).WebSocket;
    if (!impl) {
      throw new Error("No WebSocket here: on Node 20 pass `subscriptions: { webSocketImpl: require('ws') }` to createHaloClient");
    }
    this.client = createClient({
      url: this.settings.url,
      webSocketImpl: impl,
      lazy: true,
      keepAlive: this.settings.keepAliveMs,
      // Read at every (re)connection: a renewed token is used from the next socket on.
      connectionParams: () => {
        this.socketGeneration = this.session.generation;
        const token = this.session.accessToken;
        this.socketHadToken = token !== null;
        const clientInfo = this.settings.clientInfo ?? {};
        if (this.apiKey) return { ...clientInfo, 'x-api-key': this.apiKey };
        return token ? { ...clientInfo, authorization: `Bearer ${token}` } : { ...clientInfo };
      },
      retryAttempts: this.settings.reconnect.attempts,
      retryWait: (retries) => this.sleep(this.backoff(retries)),
      // graphql-ws retries only close events by default; a socket that fails to open (the gateway
      // restarting: ECONNREFUSED) is an error event, and is worth retrying too.
      shouldRetry: () => true,
      on: {
        connected: (_socket, _payload, wasRetry) => {
          this.connections++;
          this.settings.onConnected?.(wasRetry);
        },
        closed: (event) => this.settings.onClosed?.(event),
      },
    });
    return this.client;
  }
}

function isCloseEvent(v: unknown): v is { code: number; reason: string } {
  return typeof v === 'object' && v !== null && 'code' in v && 'reason' in v && typeof (v as { code: unknown }).code === 'number';
}

/** An `error` frame's payload: a list of GraphQL errors. */
export function graphQLErrors(v: unknown): GraphQLErrorEntry[] | null {
  return Array.isArray(v) && v.every((e) => typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    ? (v as GraphQLErrorEntry[])
    : null;
}

/** A subscription's events as an async iterator (`for await`); `return()` (or `break`) unsubscribes. */
export function iterateSubscription<TData>(
  subscribe: (sink: SubscriptionSink<TData>) => () => void,
): AsyncIterableIterator<GraphQLResult<TData>> {
  const queue: GraphQLResult<TData>[] = [];
  let failure: { err: unknown } | null = null;
  let done = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const unsubscribe = subscribe({
    next: (v) => {
      queue.push(v);
      notify();
    },
    error: (err) => {
      failure = { err };
      notify();
    },
    complete: () => {
      done = true;
      notify();
    },
  });
  const iterator: AsyncIterableIterator<GraphQLResult<TData>> = {
    [Symbol.asyncIterator]: () => iterator,
    next: async () => {
      for (;;) {
        if (queue.length) return { done: false, value: queue.shift()! };
        if (failure) throw failure.err;
        if (done) return { done: true, value: undefined };
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- an iterator's return answers a promise; a throw in unsubscribe must reject it
    return: async () => {
      done = true;
      unsubscribe();
      notify();
      return { done: true, value: undefined };
    },
  };
  return iterator;
}

/** The wait before reconnect number `retries` (from 0): doubling, capped, jittered. */
export function backoff({ baseDelayMs, maxDelayMs }: ReconnectOptions, retries: number): number {
  const wait = Math.min(maxDelayMs, baseDelayMs * 2 ** retries);
  // Up to 25 % jitter, so many clients dropped at once do not come back in lockstep.
  return Math.round(wait * (1 + Math.random() * 0.25));
}
