/**
 * Every failure the SDK reports has its own type, so callers branch with `instanceof`, never on
 * message text. Aborts are the one exception: they reject with the signal's own reason (a
 * `DOMException` named `AbortError`, or `TimeoutError` for `AbortSignal.timeout`), exactly as
 * `fetch` does, so existing abort handling keeps working.
 */

/** A REST answer with a status of 400 or more (docs/api/conventions.md "Bodies and errors"). */
export class HaloApiError extends Error {
  override readonly name = 'HaloApiError';
  /** HTTP status. */
  readonly status: number;
  /** The parsed body (`{"error": "…", …}` for every Halo error), or the raw text when not JSON. */
  readonly body: unknown;
  /** `X-Request-Id` of the answer: quote it when reporting a problem. */
  readonly requestId: string | null;
  /** `Retry-After` in milliseconds, when the answer carried one (409 in progress, 429, 503). */
  readonly retryAfterMs: number | null;
  readonly method: string;
  readonly url: string;
  /** The `Idempotency-Key` the request carried: send the same request again with it (payments). */
  readonly idempotencyKey: string | null;

  constructor(init: {
    status: number;
    message: string;
    body: unknown;
    requestId: string | null;
    retryAfterMs: number | null;
    method: string;
    url: string;
    idempotencyKey?: string | null;
  }) {
    super(init.message);
    this.status = init.status;
    this.body = init.body;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.method = init.method;
    this.url = init.url;
    this.idempotencyKey = init.idempotencyKey ?? null;
  }
}

/**
 * The session is over: a request was refused with 401 and `POST /auth/refresh` refused to renew
 * the access token (the refresh cookie is missing, expired, revoked or reused). The token has been
 * cleared; sign in again.
 */
export class SignedOutError extends Error {
  override readonly name = 'SignedOutError';
  constructor(
    message = 'Signed out: the session could not be refreshed; sign in again',
    /** The refresh answer that ended the session, when there was one. */
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * No HTTP answer at all (connection refused or reset, DNS, per-attempt timeout), after the retries
 * allowed. Whether the server acted on the request is unknown: resend a payment with the same
 * `idempotencyKey`, never with a new one.
 */
export class HaloNetworkError extends Error {
  override readonly name = 'HaloNetworkError';
  readonly method: string;
  readonly url: string;
  /** How many times the request was sent. */
  readonly attempts: number;
  readonly idempotencyKey: string | null;
  override readonly cause: unknown;

  constructor(init: { message: string; method: string; url: string; attempts: number; idempotencyKey?: string | null; cause?: unknown }) {
    super(init.message);
    this.method = init.method;
    this.url = init.url;
    this.attempts = init.attempts;
    this.idempotencyKey = init.idempotencyKey ?? null;
    this.cause = init.cause;
  }
}

/** One GraphQL error as the gateway formats it (docs/api/graphql.md). */
export interface GraphQLErrorEntry {
  message: string;
  path?: ReadonlyArray<string | number>;
  locations?: ReadonlyArray<{ line: number; column: number }>;
  extensions?: { code?: string; [key: string]: unknown };
}

/**
 * A GraphQL answer with `errors`: business errors (HTTP 200, partial `data`), refused operations
 * (400: depth, cost, …; 401: UNAUTHENTICATED) and subscription `error` frames alike.
 */
export class GraphQLRequestError extends Error {
  override readonly name = 'GraphQLRequestError';
  constructor(
    readonly errors: readonly GraphQLErrorEntry[],
    /** Whatever data came with the errors (the failed fields are null). */
    readonly data: unknown,
    /** HTTP status of the answer; 200 for business errors, null for a subscription frame. */
    readonly status: number | null,
    readonly requestId: string | null = null,
  ) {
    super(errors.map((e) => e.message).join('; ') || 'GraphQL error');
  }
  /** `extensions.code` of each error, in order (undefined where an error has none). */
  get codes(): (string | undefined)[] {
    return this.errors.map((e) => e.extensions?.code);
  }
  /** Whether any error carries this `extensions.code`. */
  hasCode(code: string): boolean {
    return this.errors.some((e) => e.extensions?.code === code);
  }
}

/** The subscription socket closed and will not be reopened (graphql-ws gave up, or a fatal close code). */
export class SubscriptionClosedError extends Error {
  override readonly name = 'SubscriptionClosedError';
  constructor(
    readonly code: number | null,
    readonly reason: string,
    override readonly cause?: unknown,
  ) {
    super(code === null ? `Subscription connection failed: ${reason}` : `Subscription connection closed: ${code} ${reason}`);
  }
}

/** What an aborted signal rejects with: its reason (fetch's behaviour), or an AbortError when it has none. */
export function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const err = new Error('This operation was aborted');
  err.name = 'AbortError';
  return err;
}
