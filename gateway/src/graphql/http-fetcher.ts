import type { RemoteGraphQLDataSource } from '@apollo/gateway';
import { Pool, type Dispatcher } from 'undici';
import { CLOSED_UNDER_REQUEST, sendOnNewConnection, TIMED_OUT } from '../http';

/** Apollo's minimal fetch contract (@apollo/utils.fetcher, reached through the gateway's types). */
export type Fetcher = RemoteGraphQLDataSource['fetcher'];
export type FetcherRequestInit = NonNullable<Parameters<Fetcher>[1]>;
type FetcherResponse = Awaited<ReturnType<Fetcher>>;
type FetcherHeaders = FetcherResponse['headers'];

/** A subgraph answer read to the end once. */
export interface BufferedAnswer {
  status: number;
  statusText: string;
  url: string;
  redirected: boolean;
  headers: [string, string][];
  body: string;
}

/**
 * A subgraph answer's headers as fetch's `Headers` show them (names case-insensitive, repeated
 * names joined with ", ", iterated lower-case in name order), over a plain Map. Built per subgraph
 * answer, so it must be cheap: WHATWG `Headers` validates every name and value through WebIDL
 * converters, which the profile of `me { orders }` with distinct callers showed (two per
 * subgraph fetch with dedupe) for answers node:http has already parsed and validated.
 */
export class AnswerHeaders implements FetcherHeaders {
  readonly #map = new Map<string, string>();

  constructor(entries: readonly (readonly [string, string])[] = []) {
    for (const [name, value] of entries) this.append(name, value);
  }

  append(name: string, value: string): void {
    const key = name.toLowerCase();
    const had = this.#map.get(key);
    this.#map.set(key, had === undefined ? value : `${had}, ${value}`);
  }

  delete(name: string): void {
    this.#map.delete(name.toLowerCase());
  }

  get(name: string): string | null {
    return this.#map.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.#map.has(name.toLowerCase());
  }

  set(name: string, value: string): void {
    this.#map.set(name.toLowerCase(), value);
  }

  #sorted(): [string, string][] {
    return [...this.#map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  entries(): IterableIterator<[string, string]> {
    return this.#sorted()[Symbol.iterator]();
  }

  keys(): IterableIterator<string> {
    return this.#sorted()
      .map(([k]) => k)
      [Symbol.iterator]();
  }

  values(): IterableIterator<string> {
    return this.#sorted()
      .map(([, v]) => v)
      [Symbol.iterator]();
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/**
 * A response over an answer already read: its own headers and its own body reads, so `json()`
 * parses a fresh object each time, and several responses over one answer (in-flight dedupe,
 * src/graphql/dedupe.ts) cannot change what another request sees.
 */
export class BufferedResponse implements FetcherResponse {
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly redirected: boolean;
  readonly ok: boolean;
  readonly headers: FetcherHeaders;
  #used = false;

  constructor(private readonly answer: BufferedAnswer) {
    this.status = answer.status;
    this.statusText = answer.statusText;
    this.url = answer.url;
    this.redirected = answer.redirected;
    this.ok = answer.status >= 200 && answer.status < 300;
    this.headers = new AnswerHeaders(answer.headers);
  }

  /** The answer itself, the body counted as read: how in-flight dedupe keeps an answer without copying it. */
  takeAnswer(): BufferedAnswer {
    this.#read();
    return this.answer;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  #read(): string {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    return this.answer.body;
  }

  /* eslint-disable @typescript-eslint/require-await -- fetch's Response: a body read twice, or JSON that
     does not parse, rejects rather than throws, and @apollo/gateway awaits it as such. */
  async text(): Promise<string> {
    return this.#read();
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.#read());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = Buffer.from(this.#read(), 'utf8');
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  }
  /* eslint-enable @typescript-eslint/require-await */

  clone(): FetcherResponse {
    if (this.#used) throw new TypeError('Response.clone: Body has already been consumed.');
    return new BufferedResponse(this.answer);
  }
}

export interface HttpFetcherOptions {
  /** Connections per subgraph origin; requests beyond wait in the pool's queue. */
  maxSockets?: number;
  /** Time without the answer's headers, or between two chunks of its body, before a subgraph request is given up (undici's fetch: 300 s). */
  timeoutMs?: number;
}

/**
 * Whether a subgraph request's body is a query: SubgraphDataSource writes `{"query":…}` first, and
 * the document's first word (or its `{` shorthand) says which operation it is.
 */
export function isQueryBody(body: unknown): boolean {
  return typeof body === 'string' && /^\{"query":"(?:\s|\\[nrt])*(?:query\b|\{)/.test(body);
}

/** The fetcher, and `close()`: its keep-alive pools closed (requests in flight finish first); later fetches fail. */
export type HttpFetcher = Fetcher & { close(): Promise<void> };

/**
 * The subgraph fetcher: undici's dispatcher API over one keep-alive pool per origin, the answer
 * read into one string. Node's global fetch (undici too) wraps the same client in WHATWG streams,
 * AbortSignals and Request/Response objects made per request; node:http builds a ClientRequest, an
 * IncomingMessage and their streams per request: both showed in the profiles (the first on the
 * nested query, about a quarter of the gateway's busy CPU; the second on `me { orders }` with
 * distinct callers). Here one handler object per request collects status, headers and chunks.
 * Apollo reads every subgraph answer whole (JSON) anyway, so nothing streams. A request that gets
 * no answer (refused, reset, timed out) rejects with a TypeError whose `cause` is the socket error
 * (a timeout's code: ETIMEDOUT), as fetch's does. One per gateway: its stop closes the pools, so
 * no keep-alive socket outlives it.
 */
export function createHttpFetcher({ maxSockets = 256, timeoutMs = 300_000 }: HttpFetcherOptions = {}): HttpFetcher {
  const timeouts = { headersTimeout: timeoutMs, bodyTimeout: timeoutMs };
  const origins = new Map<string, { pool: Pool; origin: string; path: string }>();
  let closed = false;
  const originOf = (url: string) => {
    if (closed) throw Object.assign(new TypeError('fetch failed'), { cause: new Error('the gateway is stopping') });
    let origin = origins.get(url);
    if (origin) return origin;
    const u = new URL(url);
    origin = { pool: new Pool(u.origin, { connections: maxSockets, ...timeouts }), origin: u.origin, path: `${u.pathname}${u.search}` };
    // A gateway talks to a handful of subgraph URLs: one entry (and one pool) each.
    origins.set(url, origin);
    return origin;
  };

  const fetcher: Fetcher = (url, init = {}) =>
    new Promise<FetcherResponse>((resolve, reject) => {
      const { pool, origin, path } = originOf(url);
      /** `first`: on the pool, and it may go once more; else on a new connection. */
      const send = (first: boolean) => {
        const chunks: Buffer[] = [];
        const headers: [string, string][] = [];
        let status = 502;
        let statusText = '';
        let answered = false;
        // The handler interface every undici 7 dispatcher accepts (onConnect … onComplete / onError).
        const handler: Dispatcher.DispatchHandler = {
          onConnect() {},
          onHeaders(statusCode, rawHeaders, _resume, statusMessage) {
            answered = true;
            status = statusCode;
            statusText = statusMessage;
            for (let k = 0; k < rawHeaders.length; k += 2)
              headers.push([rawHeaders[k]!.toString('latin1'), rawHeaders[k + 1]!.toString('latin1')]);
            return true;
          },
          onData(chunk) {
            chunks.push(chunk);
            return true;
          },
          onComplete() {
            // After undici has put the connection back (it does so once this returns): the caller's
            // next request then finds it free instead of opening another.
            setImmediate(
              resolve,
              new BufferedResponse({
                status,
                statusText,
                url,
                redirected: false,
                headers,
                body: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'),
              }),
            );
          },
          onError(err) {
            const code = (err as { code?: string }).code;
            // A kept-alive connection the subgraph closed as the request went out (a pod draining in
            // a rolling update, an idle timeout): no answer came, so a query, which changes nothing,
            // goes once more, on a new connection (src/http/upstream.ts). A mutation may have run:
            // its failure stands.
            if (first && !answered && code !== undefined && CLOSED_UNDER_REQUEST.has(code) && isQueryBody(init.body)) return send(false);
            const cause =
              code !== undefined && TIMED_OUT.has(code)
                ? Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })
                : err;
            reject(Object.assign(new TypeError('fetch failed'), { cause }));
          },
        };
        const request = { path, method: init.method ?? 'GET', headers: init.headers ?? {}, body: init.body ?? null };
        if (first) pool.dispatch(request, handler);
        else sendOnNewConnection(origin, timeouts, request, handler);
      };
      send(true);
    });
  return Object.assign(fetcher, {
    async close(): Promise<void> {
      closed = true;
      const pools = [...origins.values()].map((origin) => origin.pool);
      origins.clear();
      await Promise.all(pools.map((pool) => pool.close()));
    },
  });
}
