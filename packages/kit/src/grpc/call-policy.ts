import {
  BrokenCircuitError,
  CircuitState,
  circuitBreaker,
  ConsecutiveBreaker,
  ExponentialBackoff,
  handleWhen,
  retry,
  wrap,
  type CircuitBreakerPolicy,
  type IPolicy,
} from 'cockatiel';
import * as grpc from '@grpc/grpc-js';
import { unavailable } from '../errors/errors';
import type { Logger } from '../logging/logger';
import type { GrpcClientMetrics } from '../metrics/metrics';

/**
 * What stands between a service and a peer it calls over gRPC, so one slow or dead peer does not
 * take its callers down with it (cockatiel's policies):
 *
 * - **Retries with jitter** — only for calls that are safe to repeat (reads: `idempotent: true`)
 *   and only when the peer could not be reached (`UNAVAILABLE`): at most `GRPC_RETRIES` more
 *   attempts, exponential backoff with decorrelated jitter from 25 ms, all within the call's one
 *   deadline (an attempt past it fails as DEADLINE_EXCEEDED, which is not retried).
 * - **A circuit breaker per peer** — after `GRPC_BREAKER_THRESHOLD` consecutive failed attempts
 *   (unreachable or past its deadline; a business answer such as NOT_FOUND is a success here) calls
 *   fail at once with the kit's 503 `Upstream service unavailable` instead of waiting for deadlines,
 *   for `GRPC_BREAKER_HALF_OPEN_MS`; then one call is let through, and its success closes it.
 *
 * With the calling process's metrics, every call is timed by method and final status (retries
 * included), retries are counted and the breaker's state is reported (kit/src/metrics/metrics.ts).
 */
export interface CallPolicySettings {
  retries: number;
  breakerThreshold: number;
  halfOpenMs: number;
}

const RETRYABLE = new Set([grpc.status.UNAVAILABLE]);
const BREAKING = new Set([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]);
const codeOf = (err: unknown) => (err as { code?: unknown }).code;
const seconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

export class CallPolicy {
  private readonly breaker: CircuitBreakerPolicy;
  private readonly withRetries: IPolicy;

  constructor(
    readonly peer: string,
    settings: CallPolicySettings,
    logger?: Logger,
    private readonly metrics?: GrpcClientMetrics,
  ) {
    this.breaker = circuitBreaker(
      handleWhen((err) => BREAKING.has(codeOf(err) as number)),
      { halfOpenAfter: settings.halfOpenMs, breaker: new ConsecutiveBreaker(Math.max(1, settings.breakerThreshold)) },
    );
    this.breaker.onBreak(() => {
      logger?.warn({ peer }, 'circuit opened: calls to this peer fail fast');
      metrics?.breakerOpened(peer);
    });
    this.breaker.onReset(() => logger?.info({ peer }, 'circuit closed: the peer answers again'));
    metrics?.watchBreaker(peer, () => this.breaker.state !== CircuitState.Closed);
    const retries = retry(
      handleWhen((err) => RETRYABLE.has(codeOf(err) as number)),
      { maxAttempts: Math.max(0, settings.retries), backoff: new ExponentialBackoff({ initialDelay: 25, maxDelay: 500 }) },
    );
    this.withRetries = wrap(retries, this.breaker);
  }

  /**
   * Runs one call (`attempt` makes a whole attempt and rejects with the peer's gRPC error);
   * `method` names it in the metrics (`halo.content.v1.UserService/GetUser`).
   */
  async run<T>(attempt: () => Promise<T>, idempotent: boolean, method = 'unknown'): Promise<T> {
    const metrics = this.metrics;
    const started = metrics ? process.hrtime.bigint() : 0n;
    let attempts = 0;
    const policy = idempotent ? this.withRetries : this.breaker;
    try {
      const result = await policy.execute(metrics ? () => (attempts++, attempt()) : attempt);
      metrics?.call(this.peer, method, 'OK', seconds(started), attempts - 1);
      return result;
    } catch (err) {
      const failedFast = err instanceof BrokenCircuitError;
      metrics?.call(
        this.peer,
        method,
        failedFast ? 'CIRCUIT_OPEN' : (grpc.status[codeOf(err) as number] ?? 'UNKNOWN'),
        seconds(started),
        Math.max(0, attempts - 1),
      );
      if (failedFast) throw unavailable('Upstream service unavailable');
      throw err;
    }
  }

  /** `closed`, `open`, `halfOpen` or `isolated` (tests, metrics). */
  get state(): string {
    return {
      [CircuitState.Closed]: 'closed',
      [CircuitState.Open]: 'open',
      [CircuitState.HalfOpen]: 'halfOpen',
      [CircuitState.Isolated]: 'isolated',
    }[this.breaker.state];
  }
}

/** The defaults of the GRPC_RETRIES / GRPC_BREAKER_* variables. */
export const DEFAULT_CALL_POLICY: CallPolicySettings = { retries: 2, breakerThreshold: 5, halfOpenMs: 5_000 };

/** A peer's policy from a service's validated config; with `metrics` (the caller's), its calls are measured. */
export function callPolicyFor(
  peer: string,
  config: { GRPC_RETRIES?: number; GRPC_BREAKER_THRESHOLD?: number; GRPC_BREAKER_HALF_OPEN_MS?: number },
  logger?: Logger,
  metrics?: GrpcClientMetrics,
): CallPolicy {
  return new CallPolicy(
    peer,
    {
      retries: config.GRPC_RETRIES ?? DEFAULT_CALL_POLICY.retries,
      breakerThreshold: config.GRPC_BREAKER_THRESHOLD ?? DEFAULT_CALL_POLICY.breakerThreshold,
      halfOpenMs: config.GRPC_BREAKER_HALF_OPEN_MS ?? DEFAULT_CALL_POLICY.halfOpenMs,
    },
    logger,
    metrics,
  );
}
