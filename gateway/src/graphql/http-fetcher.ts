import type { IncomingMessage } from 'node:http';
import type { RemoteGraphQLDataSource } from '@apollo/gateway';
import { upstreamOrigin, type UpstreamOrigin } from '../http';

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
  /** Sockets per subgraph origin; requests beyond wait in the agent's queue. */
  maxSockets?: number;
  /** Socket inactivity before a subgraph request is given up (undici's fetch: 300 s). */
  timeoutMs?: number;
}

interface Origin extends UpstreamOrigin {
  path: string;
}

/**
 * The subgraph fetcher: node:http over one keep-alive pool per origin, the answer read into one
 * string. Node's global fetch does the same job through WHATWG streams, AbortSignals and
 * transferable objects made per request; profiled on the nested query without dedupe, that
 * machinery was about a quarter of the gateway's busy CPU. Apollo reads every subgraph answer
 * whole (JSON) anyway, so nothing streams here. A request that gets no answer (refused, reset,
 * timed out) rejects with a TypeError whose `cause` is the socket error, as fetch's does.
 */
export function createHttpFetcher({ maxSockets = 256, timeoutMs = 300_000 }: HttpFetcherOptions = {}): Fetcher {
  const origins = new Map<string, Origin>();
  const originOf = (url: string): Origin => {
    let origin = origins.get(url);
    if (origin) return origin;
    const u = new URL(url);
    origin = { ...upstreamOrigin(u, maxSockets), path: `${u.pathname}${u.search}` };
    // A gateway talks to a handful of subgraph URLs: one entry (and one pool) each.
    origins.set(url, origin);
    return origin;
  };

  return (url, init = {}) =>
    new Promise<FetcherResponse>((resolve, reject) => {
      const origin = originOf(url);
      const body = init.body;
      const headers: Record<string, string | number> = { ...init.headers };
      if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
      const failed = (err: Error) => reject(Object.assign(new TypeError('fetch failed'), { cause: err }));
      const req = origin.send({
        hostname: origin.hostname,
        port: origin.port,
        path: origin.path,
        method: init.method ?? 'GET',
        headers,
        agent: origin.agent,
        timeout: timeoutMs,
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', failed);
      req.on('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', failed);
        res.on('end', () => {
          const entries: [string, string][] = [];
          const raw = res.rawHeaders;
          for (let i = 0; i < raw.length; i += 2) entries.push([raw[i]!, raw[i + 1]!]);
          resolve(
            new BufferedResponse({
              status: res.statusCode ?? 502,
              statusText: res.statusMessage ?? '',
              url,
              redirected: false,
              headers: entries,
              body: (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'),
            }),
          );
        });
      });
      req.end(body);
    });
}
