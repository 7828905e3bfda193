import type { RemoteGraphQLDataSource } from '@apollo/gateway';

/** Apollo's minimal fetch contract (@apollo/utils.fetcher, reached through the gateway's types). */
type Fetcher = RemoteGraphQLDataSource['fetcher'];
type FetcherRequestInit = NonNullable<Parameters<Fetcher>[1]>;
type FetcherResponse = Awaited<ReturnType<Fetcher>>;
type FetcherHeaders = FetcherResponse['headers'];

/**
 * Headers that differ per incoming request without changing what a subgraph answers: left out of
 * the key, so two callers' identical fetches still meet. Everything else the gateway forwards
 * (above all `authorization`) is part of it.
 */
const PER_REQUEST_HEADERS = new Set(['x-request-id']);

/** A subgraph answer read to the end once, handed to every fetch that waited for it. */
interface SharedAnswer {
  status: number;
  statusText: string;
  url: string;
  redirected: boolean;
  headers: [string, string][];
  body: string;
}

/**
 * One waiter's view of a shared answer: its own headers and its own body reads, so `json()` parses
 * a fresh object each time and nobody can change what another request sees.
 */
class SharedResponse implements FetcherResponse {
  readonly status: number;
  readonly statusText: string;
  readonly url: string;
  readonly redirected: boolean;
  readonly ok: boolean;
  readonly headers: FetcherHeaders;
  #used = false;

  constructor(private readonly answer: SharedAnswer) {
    this.status = answer.status;
    this.statusText = answer.statusText;
    this.url = answer.url;
    this.redirected = answer.redirected;
    this.ok = answer.status >= 200 && answer.status < 300;
    this.headers = new Headers(answer.headers) as unknown as FetcherHeaders;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  #read(): string {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    return this.answer.body;
  }

  async text(): Promise<string> {
    return this.#read();
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.#read());
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = Buffer.from(this.#read(), 'utf8');
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  clone(): FetcherResponse {
    if (this.#used) throw new TypeError('Response.clone: Body has already been consumed.');
    return new SharedResponse(this.answer);
  }
}

/** The identity of a fetch: where it goes, the credentials and other headers it carries, its body. */
function keyOf(url: string, init: FetcherRequestInit | undefined): string | null {
  const body = init?.body;
  if (typeof body !== 'string') return null;
  let key = `${init?.method ?? 'GET'} ${url}\n`;
  const headers = init?.headers;
  if (headers) {
    // Usually two names (content-type, authorization): sorting them costs nothing.
    for (const name of Object.keys(headers).sort()) {
      const lower = name.toLowerCase();
      if (!PER_REQUEST_HEADERS.has(lower)) key += `${lower}: ${headers[name]}\n`;
    }
  }
  return `${key}\n${body}`;
}

export interface DedupingFetcher {
  fetcher: Fetcher;
  /** Distinct fetches in flight now (each possibly awaited by several requests). */
  inFlight(): number;
  /** Fetches waiting now for an identical one's answer instead of sending their own. */
  waiting(): number;
  /** Fetches that shared another's answer, since start. */
  shared(): number;
}

/**
 * Wraps a fetcher so that a fetch identical to one already in flight (same URL, method, headers
 * but the request id, body) waits for that one's answer instead of sending its own. The answer is
 * read once and every waiter gets its own response over the same bytes; a failed fetch fails for
 * every waiter. A fetch that arrives after the answer is complete goes out on its own: nothing is
 * cached. The caller decides what may share (read-only operations: see SubgraphDataSource).
 */
export function dedupingFetcher(fetcher: Fetcher): DedupingFetcher {
  const pending = new Map<string, Promise<SharedAnswer>>();
  let waiting = 0;
  let shared = 0;

  async function fetchAndRead(url: string, init: FetcherRequestInit | undefined): Promise<SharedAnswer> {
    const res = await fetcher(url, init);
    const body = await res.text();
    return {
      status: res.status,
      statusText: res.statusText,
      url: res.url,
      redirected: res.redirected,
      headers: [...res.headers],
      body,
    };
  }

  return {
    inFlight: () => pending.size,
    waiting: () => waiting,
    shared: () => shared,
    async fetcher(url, init) {
      const key = keyOf(url, init);
      if (key === null) return fetcher(url, init);
      const inFlight = pending.get(key);
      if (inFlight) {
        waiting++;
        shared++;
        try {
          return new SharedResponse(await inFlight);
        } finally {
          waiting--;
        }
      }
      const answer = fetchAndRead(url, init);
      pending.set(key, answer);
      try {
        return new SharedResponse(await answer);
      } finally {
        // Answered means no longer in flight: the next identical fetch is sent afresh.
        pending.delete(key);
      }
    },
  };
}
