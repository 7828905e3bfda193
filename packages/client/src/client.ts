import { clientInfoHeaders, unlessGiven } from './client-info.js';
import { MemoryCookieJar, type CookieJar } from './cookie-jar.js';
import { GraphQLClient, type GraphQLSettings } from './graphql.js';
import {
  AuthApi,
  ContentApi,
  OrdersApi,
  PaymentsApi,
  ProductsApi,
  refreshAccessToken,
  type ProductsV1Api,
  type ProductsV2Api,
} from './rest.js';
import { DEFAULT_RETRY, realSleep, type RetryOptions, type Sleep } from './retry.js';
import { Session } from './session.js';
import { Subscriptions, type ReconnectOptions, type SubscriptionTransport, type SubscriptionTransportFactory } from './subscriptions.js';
import { Transport, type DeprecationNotice, type FetchCredentials, type HaloResponse, type RequestSpec } from './transport.js';

export interface HaloClientOptions {
  /** The gateway, the one address of Halo (default `http://127.0.0.1:4000`). */
  baseUrl?: string;
  /** An access token to start with (e.g. kept from an earlier run). */
  accessToken?: string | null;
  /** Called whenever the access token changes (login, renewal, sign-out: null). */
  onTokenChange?: (token: string | null) => void;
  /** Server-to-server: send `X-API-Key` instead of a token (no refresh then). */
  apiKey?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** The retry rules (src/retry.ts); default the contract's: 3 retries after 1, 2, 4 s. */
  retry?: Partial<RetryOptions>;
  /** Waits between retries and reconnects; injectable for tests. */
  sleep?: Sleep;
  /** The clock (Retry-After dates, cookie expiry); injectable for tests. */
  now?: () => number;
  /** Deadline of each attempt; a timed-out attempt counts as a network failure. Default: none. */
  timeoutMs?: number;
  /**
   * Where the refresh cookie is kept outside a browser. Default: an in-memory jar (browsers keep
   * httpOnly cookies themselves and hide Set-Cookie, so there it simply stays empty). `false`: none.
   */
  cookieJar?: CookieJar | false;
  /** `credentials` of the /auth/* requests (default `include`, so a browser sends the refresh cookie cross-origin too). */
  credentials?: FetchCredentials;
  /** Sent with every request (over HTTP and SSE; not in a WebSocket's `connection_init`). */
  headers?: Record<string, string>;
  /**
   * The name the gateway records this app's GraphQL usage under, sent as `apollographql-client-name`
   * with every GraphQL request and subscription (HTTP, SSE, and the WebSocket's `connection_init`).
   * The registry's checks name it with the version when a change would break an operation it
   * sends: `GetProducts (ios-app 2.3.1, 12)`. Default `@halo/client` (and this package's version);
   * `''` sends neither header. At most 64 characters of `A-Z a-z 0-9 . _ / @ -` are kept.
   */
  clientName?: string;
  /**
   * The app's version, sent as `apollographql-client-version` (e.g. `2.3.1`). Default: none when
   * `clientName` is set, this package's version when it is not. At most 64 characters of
   * `A-Z a-z 0-9 . _ + -`: the gateway records any other as no version.
   */
  clientVersion?: string;
  /** Called for an answer from a deprecated API version (`Deprecation`, `Sunset`, `Link`). */
  onDeprecation?: (notice: DeprecationNotice) => void;
  graphql?: Partial<GraphQLSettings>;
  subscriptions?: {
    /**
     * `websocket` (default): graphql-ws at `ws(s)://…/graphql`. `sseTransport` from
     * `@halo/client/sse`: Server-Sent Events (the graphql-sse protocol) at `…/graphql/stream`, one
     * HTTP request per subscription, for where a WebSocket cannot go; it needs the `graphql` package.
     */
    transport?: 'websocket' | SubscriptionTransportFactory;
    /** Default: the base URL with ws(s):// and the GraphQL path (`sse`: the base URL and `/graphql/stream`). */
    url?: string;
    /** Browsers and Node ≥ 22 have a WebSocket; on Node 20 pass `require('ws')` (`websocket` only). */
    webSocketImpl?: unknown;
    reconnect?: Partial<ReconnectOptions>;
    keepAliveMs?: number;
    /** Each acknowledged connection; `reconnected` is true when it follows a lost one. */
    onConnected?: (reconnected: boolean) => void;
    /** Each closed socket (`{ code, reason }`), before any reconnect. */
    onClosed?: (event: unknown) => void;
  };
}

/**
 * Halo's client: every public REST route, GraphQL (persisted queries, GET, batching) and
 * subscriptions, with the contract's retry rules and token renewal. Runs in browsers and on
 * Node ≥ 20 (fetch, Web Crypto, AbortSignal; nothing Node-only).
 */
export class HaloClient {
  readonly auth: AuthApi;
  readonly content: ContentApi;
  /** v1 products (`price`), the unversioned paths; deprecated, sunset 2027-09-01. */
  readonly products: ProductsV1Api;
  /** v2 products (`price_cents`), `/api/v2/products`. */
  readonly productsV2: ProductsV2Api;
  readonly payments: PaymentsApi;
  readonly orders: OrdersApi;
  readonly graphql: GraphQLClient;
  readonly cookieJar: CookieJar | null;
  private readonly transport: Transport;
  private readonly session: Session;
  private readonly subscriptions: SubscriptionTransport;

  constructor(opts: HaloClientOptions = {}) {
    const baseUrl = (opts.baseUrl ?? 'http://127.0.0.1:4000').replace(/\/+$/, '');
    const now = opts.now ?? Date.now;
    const sleep = opts.sleep ?? realSleep;
    this.cookieJar = opts.cookieJar === false ? null : (opts.cookieJar ?? new MemoryCookieJar(now));
    // Bound late: a browser's fetch must be called on globalThis.
    const fetchImpl: typeof fetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    // The session refreshes through the transport, created next (the closure runs only later).
    this.session = new Session(opts.accessToken ?? null, () => refreshAccessToken(transport), opts.onTokenChange);
    const transport = new Transport(
      {
        baseUrl,
        fetch: fetchImpl,
        retry: { ...DEFAULT_RETRY, ...opts.retry },
        sleep,
        now,
        timeoutMs: opts.timeoutMs,
        cookieJar: this.cookieJar,
        headers: opts.headers ?? {},
        apiKey: opts.apiKey,
        authCredentials: opts.credentials ?? 'include',
        onDeprecation: opts.onDeprecation,
      },
      this.session,
    );
    this.transport = transport;
    const graphqlPath = opts.graphql?.path ?? '/graphql';
    const clientInfo = clientInfoHeaders(opts.clientName, opts.clientVersion);
    this.subscriptions = subscriptionTransport(opts, transport, this.session, { graphqlPath, fetchImpl, sleep, clientInfo });
    this.auth = new AuthApi(transport, this.session);
    this.content = new ContentApi(transport);
    this.products = new ProductsApi(transport, '');
    this.productsV2 = new ProductsApi(transport, '/api/v2');
    this.payments = new PaymentsApi(transport);
    this.orders = new OrdersApi(transport);
    this.graphql = new GraphQLClient(
      transport,
      { path: graphqlPath, persistedQueries: opts.graphql?.persistedQueries ?? true, getForQueries: opts.graphql?.getForQueries ?? false },
      this.subscriptions,
      // The client's own `headers` win: the transport sends them under these.
      unlessGiven(clientInfo, opts.headers),
    );
  }

  /** The current access token (null when signed out). */
  get accessToken(): string | null {
    return this.session.accessToken;
  }

  /** Replaces the access token (null signs out locally). */
  setAccessToken(token: string | null): void {
    this.session.set(token);
  }

  /**
   * Any route, with the same credentials, retries and renewal as the helpers. Resolves for
   * statuses below 400, else rejects with HaloApiError.
   */
  request<T = unknown>(spec: RequestSpec): Promise<HaloResponse<T>> {
    return this.transport.request<T>(spec);
  }

  /** Closes the subscription socket, or every event stream (ends every subscription). */
  close(): Promise<void> {
    return this.subscriptions.close();
  }
}

export function createHaloClient(opts: HaloClientOptions = {}): HaloClient {
  return new HaloClient(opts);
}

/** The subscription transport the options choose: graphql-ws (default) or graphql-sse. */
function subscriptionTransport(
  opts: HaloClientOptions,
  transport: Transport,
  session: Session,
  {
    graphqlPath,
    fetchImpl,
    sleep,
    clientInfo,
  }: { graphqlPath: string; fetchImpl: typeof fetch; sleep: Sleep; clientInfo: Record<string, string> },
): SubscriptionTransport {
  const o = opts.subscriptions;
  const reconnect = { attempts: 10, baseDelayMs: 1000, maxDelayMs: 30_000, ...o?.reconnect };
  const chosen: unknown = o?.transport;
  if (chosen === 'sse') {
    throw new TypeError("subscriptions.transport 'sse' is sseTransport from '@halo/client/sse': import it and pass it instead");
  }
  if (typeof chosen === 'object' && chosen !== null) {
    return (chosen as SubscriptionTransportFactory).create({
      url: o?.url,
      graphqlUrl: transport.url({ path: graphqlPath }),
      fetch: fetchImpl,
      reconnect,
      headers: { ...unlessGiven(clientInfo, opts.headers), ...opts.headers },
      session,
      apiKey: opts.apiKey,
      sleep,
    });
  }
  if (chosen !== undefined && chosen !== 'websocket')
    throw new TypeError(`subscriptions.transport: 'websocket' or sseTransport, not ${JSON.stringify(chosen)}`);
  return new Subscriptions(
    {
      url: o?.url ?? transport.url({ path: graphqlPath }).replace(/^http/, 'ws'),
      webSocketImpl: o?.webSocketImpl,
      reconnect,
      keepAliveMs: o?.keepAliveMs ?? 0,
      clientInfo,
      ...(o?.onConnected ? { onConnected: o.onConnected } : {}),
      ...(o?.onClosed ? { onClosed: o.onClosed } : {}),
    },
    session,
    opts.apiKey,
    sleep,
  );
}
