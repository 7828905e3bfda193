import { BufferedResponse, type BufferedAnswer, type Fetcher, type FetcherRequestInit } from './http-fetcher';

/**
 * Headers that differ per incoming request without changing what a subgraph answers: left out of
 * the key, so two callers' identical fetches still meet. Everything else the gateway forwards
 * (above all `authorization`) is part of it.
 */
const PER_REQUEST_HEADERS = new Set(['x-request-id']);

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
  inFlight: () => number;
  /** Fetches waiting now for an identical one's answer instead of sending their own. */
  waiting: () => number;
  /** Fetches that shared another's answer, since start. */
  shared: () => number;
}

/**
 * Wraps a fetcher so that a fetch identical to one already in flight (same URL, method, headers
 * but the request id, body) waits for that one's answer instead of sending its own. The answer is
 * read once and every waiter gets its own response over the same bytes; a failed fetch fails for
 * every waiter. A fetch that arrives after the answer is complete goes out on its own: nothing is
 * cached. The caller decides what may share (read-only operations: see SubgraphDataSource).
 */
export function dedupingFetcher(fetcher: Fetcher): DedupingFetcher {
  const pending = new Map<string, Promise<BufferedAnswer>>();
  let waiting = 0;
  let shared = 0;

  async function fetchAndRead(url: string, init: FetcherRequestInit | undefined): Promise<BufferedAnswer> {
    const res = await fetcher(url, init);
    // The subgraph fetcher's own responses (src/graphql/http-fetcher.ts) are already read: kept as they are.
    if (res instanceof BufferedResponse) return res.takeAnswer();
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
          return new BufferedResponse(await inFlight);
        } finally {
          waiting--;
        }
      }
      const answer = fetchAndRead(url, init);
      pending.set(key, answer);
      try {
        return new BufferedResponse(await answer);
      } finally {
        // Answered means no longer in flight: the next identical fetch is sent afresh.
        pending.delete(key);
      }
    },
  };
}
