import { setCookiesOf, type CookieJar } from './cookie-jar.js';
import { abortReason, HaloApiError, HaloNetworkError } from './errors.js';
import { abortableWait, decideRetry, isRetryable, parseRetryAfter, type RetryOptions, type Sleep } from './retry.js';
import type { Session } from './session.js';

/** Who a request is for: `required`/`optional` send the caller's credentials when there are some; `none` never does. */
export type AuthMode = 'required' | 'optional' | 'none';

/** fetch's `credentials` (spelled out: Node's types have no global `RequestCredentials`). */
export type FetchCredentials = 'omit' | 'same-origin' | 'include';

export type QueryValue = string | number | boolean | null | undefined;

export interface RequestSpec {
  method: string;
  /** Absolute path on the gateway, e.g. `/products/1`. */
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Default `required`. */
  auth?: AuthMode;
  /**
   * The contract makes this call idempotent although its method is not (a GraphQL query, an
   * order named by its client_order_id): it may be retried like a GET.
   */
  idempotent?: boolean;
  signal?: AbortSignal;
  /**
   * A multipart answer (`@defer`'s parts) is returned unread: `body` is the fetch Response, read
   * as it arrives (the caller's `signal` still aborts it). Any other answer is read as usual.
   */
  stream?: boolean;
}

export interface HaloResponse<T = unknown> {
  status: number;
  headers: Headers;
  /** Parsed JSON; the text when the answer is not JSON; null when empty. */
  body: T;
  /** `X-Request-Id` of the answer. */
  requestId: string | null;
  /** How many times the request was sent for this answer (1 without retries). */
  attempts: number;
}

export interface DeprecationNotice {
  method: string;
  url: string;
  /** `Sunset`: the HTTP-date after which the version may be gone. */
  sunset: string | null;
  /** The `Link` header (rel="successor-version": the migration guide). */
  link: string | null;
}

export interface TransportOptions {
  baseUrl: string;
  fetch: typeof fetch;
  retry: RetryOptions;
  sleep: Sleep;
  now: () => number;
  /** Per-attempt deadline; a timed-out attempt counts as a network failure (retried when allowed). */
  timeoutMs: number | undefined;
  cookieJar: CookieJar | null;
  headers: Record<string, string>;
  /** `X-API-Key` for server-to-server callers (no token, no refresh). */
  apiKey: string | undefined;
  /** `credentials` of the cookie routes (/auth/*), so a browser sends and keeps the refresh cookie. */
  authCredentials: FetchCredentials;
  onDeprecation: ((notice: DeprecationNotice) => void) | undefined;
}

/**
 * What `fetch` rejects with when there is no answer: a TypeError (the standard's "network error";
 * Node's "fetch failed"), or node-fetch's FetchError. Anything else, e.g. a bug in a custom fetch,
 * is rethrown as is instead of being retried.
 */
const isNetworkFailure = (err: unknown) => {
  // By name, not instanceof: fetch may come from another realm (Node's own, under a test VM).
  const name = typeof err === 'object' && err !== null ? (err as { name?: unknown }).name : undefined;
  return name === 'TypeError' || name === 'FetchError';
};

/**
 * HTTP to the gateway: credentials, cookies, the retry policy (src/retry.ts), and one renewal of
 * the access token after a 401 (src/session.ts).
 */
export class Transport {
  constructor(
    private readonly opts: TransportOptions,
    readonly session: Session,
  ) {}

  get baseUrl(): string {
    return this.opts.baseUrl;
  }

  /** The answer, whatever its status; throws only when there is none (network, abort, signed out). */
  async exchange<T = unknown>(spec: RequestSpec): Promise<HaloResponse<T>> {
    const auth = spec.auth ?? 'required';
    const bearer = auth !== 'none' && !this.opts.apiKey;
    const generation = this.session.generation;
    const token = bearer ? this.session.accessToken : null;
    const res = await this.withRetries<T>(spec, token);
    if (res.status !== 401 || token === null) return res;
    // The spec's refresh pattern: renew once (shared by every concurrent 401), resend once.
    const renewed = await this.session.renewAfterUnauthorized(generation, spec.signal);
    return this.withRetries<T>(spec, renewed);
  }

  /** The answer's body for a status below 400; HaloApiError otherwise. */
  async request<T = unknown>(spec: RequestSpec): Promise<HaloResponse<T>> {
    const res = await this.exchange<T>(spec);
    if (res.status >= 400) throw this.apiError(spec, res);
    return res;
  }

  apiError(spec: RequestSpec, res: HaloResponse<unknown>): HaloApiError {
    const body = res.body as { error?: unknown } | null;
    const message = body && typeof body === 'object' && typeof body.error === 'string' ? body.error : `HTTP ${res.status}`;
    return new HaloApiError({
      status: res.status,
      message,
      body: res.body,
      requestId: res.requestId,
      retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), this.opts.now()),
      method: spec.method.toUpperCase(),
      url: this.url(spec),
      idempotencyKey: idempotencyKeyOf(spec),
    });
  }

  url(spec: Pick<RequestSpec, 'path' | 'query'>): string {
    // Concatenated, not resolved: a base URL with a path prefix (behind a proxy) keeps it.
    const url = new URL(`${this.opts.baseUrl.replace(/\/+$/, '')}${spec.path}`);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    return url.toString();
  }

  private async withRetries<T>(spec: RequestSpec, token: string | null): Promise<HaloResponse<T>> {
    const method = spec.method.toUpperCase();
    const hasKey = idempotencyKeyOf(spec) !== null;
    const retryable = isRetryable(method, hasKey, spec.idempotent === true);
    for (let retriesDone = 0; ; retriesDone++) {
      let res: HaloResponse<T> | undefined;
      let failure: unknown;
      try {
        res = await this.attempt<T>(spec, method, token, retriesDone + 1);
      } catch (err) {
        if (spec.signal?.aborted) throw abortReason(spec.signal);
        if (!(err instanceof AttemptTimeout) && !isNetworkFailure(err)) throw err;
        failure = err;
      }
      const inProgress =
        res?.status === 409 &&
        typeof res.body === 'object' &&
        res.body !== null &&
        (res.body as { status?: unknown }).status === 'processing';
      const decision = decideRetry(
        res ? { kind: 'response', status: res.status, retryAfter: res.headers.get('retry-after'), inProgress } : { kind: 'network' },
        { retriesDone, retryable, hasIdempotencyKey: hasKey, nowMs: this.opts.now() },
        this.opts.retry,
      );
      if (!decision.retry) {
        if (res) return res;
        const why = failure instanceof Error ? failure.message : String(failure);
        throw new HaloNetworkError({
          message: `${method} ${this.url(spec)} failed: ${why}`,
          method,
          url: this.url(spec),
          attempts: retriesDone + 1,
          idempotencyKey: idempotencyKeyOf(spec),
          cause: failure,
        });
      }
      await abortableWait(this.opts.sleep, decision.waitMs, spec.signal);
    }
  }

  private async attempt<T>(spec: RequestSpec, method: string, token: string | null, attempt: number): Promise<HaloResponse<T>> {
    const url = this.url(spec);
    const headers: Record<string, string> = { accept: 'application/json', ...this.opts.headers };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    const auth = spec.auth ?? 'required';
    if (auth !== 'none' && this.opts.apiKey) headers['x-api-key'] = this.opts.apiKey;
    else if (token) headers.authorization = `Bearer ${token}`;
    const cookie = this.opts.cookieJar?.header(url);
    if (cookie) headers.cookie = cookie;
    Object.assign(headers, spec.headers);

    // One signal per attempt: the caller's abort, or this attempt's own deadline.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(spec.signal!.reason);
    spec.signal?.addEventListener('abort', onAbort, { once: true });
    if (spec.signal?.aborted) ctl.abort(spec.signal.reason);
    let timedOut = false;
    let streaming = false;
    const timer =
      this.opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            ctl.abort(new AttemptTimeout(this.opts.timeoutMs!));
          }, this.opts.timeoutMs);
    try {
      const res = await this.opts.fetch(url, {
        method,
        headers,
        ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
        signal: ctl.signal,
        ...(isCookieRoute(spec.path) ? { credentials: this.opts.authCredentials } : {}),
      });
      if (spec.stream && res.status < 400 && /^multipart\//i.test(res.headers.get('content-type') ?? '')) {
        streaming = true;
        this.opts.cookieJar?.store(url, setCookiesOf(res.headers));
        return { status: res.status, headers: res.headers, body: res as T, requestId: res.headers.get('x-request-id'), attempts: attempt };
      }
      // The body is part of the attempt: a connection that drops mid-body is a network failure.
      const text = await res.text();
      this.opts.cookieJar?.store(url, setCookiesOf(res.headers));
      if (res.headers.get('deprecation') && this.opts.onDeprecation) {
        this.opts.onDeprecation({ method, url, sunset: res.headers.get('sunset'), link: res.headers.get('link') });
      }
      return {
        status: res.status,
        headers: res.headers,
        body: parseBody(text, res.headers) as T,
        requestId: res.headers.get('x-request-id'),
        attempts: attempt,
      };
    } catch (err) {
      if (timedOut && !spec.signal?.aborted) throw new AttemptTimeout(this.opts.timeoutMs!);
      throw err;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
      // A streamed answer stays tied to the caller's abort until it ends.
      if (!streaming) spec.signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** An attempt that outlived `timeoutMs`: retried like any other lost answer. */
class AttemptTimeout extends Error {
  override readonly name = 'TimeoutError';
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** The `Idempotency-Key` a request carries, if any. */
function idempotencyKeyOf(spec: RequestSpec): string | null {
  for (const [k, v] of Object.entries(spec.headers ?? {})) if (k.toLowerCase() === 'idempotency-key') return v;
  return null;
}

/** auth's cookie routes: the refresh cookie has Path=/auth. */
const isCookieRoute = (path: string) => path === '/auth' || path.startsWith('/auth/');

function parseBody(text: string, headers: Headers): unknown {
  if (text === '') return null;
  const type = headers.get('content-type') ?? '';
  if (/[/+]json\b/i.test(type) || /^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
