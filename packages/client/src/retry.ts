import { abortReason } from './errors.js';

/**
 * The client retry rules of the contract (docs/api/resources.md "Client retry guidance", the
 * spec's "Client retry guidance"), as one pure decision function:
 *
 * | answer | retried? | wait before the retry |
 * |---|---|---|
 * | network failure (no answer, per-attempt timeout) | yes, if the call is idempotent | 1 s, 2 s, 4 s |
 * | status ≥ 500 | yes, if the call is idempotent | 1 s, 2 s, 4 s; a 503's `Retry-After` instead when present |
 * | 409 `Request in progress` (`status: "processing"`) to a call with an `Idempotency-Key` | yes (see below) | its `Retry-After` |
 * | any other status < 500 (429 included) | never | — |
 *
 * A call is idempotent when its method is (GET, HEAD, PUT, DELETE, OPTIONS), when it carries an
 * `Idempotency-Key`, or when the contract makes it so (a GraphQL query; an order named by its
 * `client_order_id`). At most 3 retries, so at most 4 attempts.
 *
 * Why the 409 is waited out although it is below 500: the spec names this answer as the state
 * "processing" of a payment retried while its first attempt runs, and the docs (resources.md
 * "Payments", the README's "Retrying safely") say to wait `Retry-After` and send it again with the
 * same key; the only possible answers to that resend are the first request's own response or
 * another 409, so it can neither charge twice nor turn a failure into a success. Without it, the
 * SDK's own retry after a dropped connection would surface a 409 for a payment that is about to
 * succeed. `retryInProgress: false` restores the strict "nothing below 500" reading.
 *
 * Why 429 is never retried: the docs say nothing about resending it (it answers failed logins,
 * where an automatic resend only adds failures), and the spec says statuses below 500 are not
 * retried. The error carries `retryAfterMs` for the caller to decide.
 *
 * No retry library expresses these rules (async-retry/p-retry give the backoff but neither the
 * method/key rule, nor `Retry-After`, nor abortable waits; ky retries 408/413/429 by default and
 * only by method), so this small module is the policy, tested on its own (retry.test.ts) and
 * against real failing servers (test/retry.test.ts).
 */
export interface RetryOptions {
  /** Retries after the first attempt (spec: 3). */
  retries: number;
  /** Wait before retry n (0-based); the last value repeats if there are more retries (spec: 1, 2, 4 s). */
  delaysMs: readonly number[];
  /** Wait out a 409 `Request in progress` of a call carrying an `Idempotency-Key` (default true). */
  retryInProgress: boolean;
  /** A `Retry-After` longer than this is not waited for: the error is surfaced instead (default 30 s, payments' lock). */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  retries: 3,
  delaysMs: [1000, 2000, 4000],
  retryInProgress: true,
  maxRetryAfterMs: 30_000,
};

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/** Whether a call may be sent again: an idempotent method, an `Idempotency-Key`, or the contract says so. */
export function isRetryable(method: string, hasIdempotencyKey: boolean, idempotentByContract = false): boolean {
  return IDEMPOTENT_METHODS.has(method.toUpperCase()) || hasIdempotencyKey || idempotentByContract;
}

/** What one attempt produced, as far as the policy cares. */
export type AttemptOutcome =
  | { kind: 'network' }
  | {
      kind: 'response';
      status: number;
      /** The raw `Retry-After` header, if any. */
      retryAfter: string | null;
      /** A 409 whose body says `"status": "processing"` (payments' in-progress answer). */
      inProgress: boolean;
    };

export type RetryDecision = { retry: true; waitMs: number } | { retry: false };

/**
 * Whether to send again after the attempt numbered `retriesDone` (0 for the first attempt) and
 * how long to wait first.
 */
export function decideRetry(
  outcome: AttemptOutcome,
  ctx: { retriesDone: number; retryable: boolean; hasIdempotencyKey: boolean; nowMs: number },
  opts: RetryOptions = DEFAULT_RETRY,
): RetryDecision {
  if (!ctx.retryable || ctx.retriesDone >= opts.retries) return { retry: false };
  const backoff = opts.delaysMs[Math.min(ctx.retriesDone, opts.delaysMs.length - 1)] ?? 0;
  if (outcome.kind === 'network') return { retry: true, waitMs: backoff };
  const { status } = outcome;
  if (status >= 500) {
    if (status !== 503) return { retry: true, waitMs: backoff };
    const hinted = parseRetryAfter(outcome.retryAfter, ctx.nowMs);
    if (hinted === null) return { retry: true, waitMs: backoff };
    return hinted <= opts.maxRetryAfterMs ? { retry: true, waitMs: hinted } : { retry: false };
  }
  if (status === 409 && outcome.inProgress && ctx.hasIdempotencyKey && opts.retryInProgress) {
    const hinted = parseRetryAfter(outcome.retryAfter, ctx.nowMs) ?? backoff;
    return hinted <= opts.maxRetryAfterMs ? { retry: true, waitMs: hinted } : { retry: false };
  }
  return { retry: false };
}

/**
 * `Retry-After` in milliseconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); null when
 * absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | null {
  if (value === null || value === undefined) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at) || !/[a-z]/i.test(v)) return null;
  return Math.max(0, at - nowMs);
}

/** A timer-based wait. Injectable (client option `sleep`) so tests run without real delays. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Waits with `sleep`, but an abort always ends the wait at once, even if an injected `sleep`
 * ignores its signal.
 */
export function abortableWait(sleep: Sleep, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return sleep(ms);
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    sleep(ms, signal).then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
