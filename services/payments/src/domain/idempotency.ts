import { randomBytes } from 'node:crypto';
import { unavailable } from '@halo/kit/errors';
import type { Logger } from '@halo/kit/logging';
import type { Outcome, StoredResponse } from './model';
import { keyReused, RequestInProgress, retryAfterSeconds, sha256Hex, STORE_UNAVAILABLE } from './rules';

/**
 * Retry-safe requests with an `Idempotency-Key` (docs/api/resources.md "Payments"). No npm
 * library met these rules, so they are written here, once, over a small store interface with a
 * Redis implementation (replicas share it) and an in-process one (the embedded mode):
 *
 * - a key is scoped to its caller; a request's fingerprint is SHA-256 of method, path and
 *   canonical JSON body;
 * - the first request takes a lock (`SET … NX PX <lockMs>`) holding a random token and the
 *   fingerprint; a concurrent one gets 409 `Request in progress` with `Retry-After`;
 * - a completed response (status, the headers that matter, exact body) is stored for
 *   `responseTtlMs` and replayed byte for byte; nothing runs again;
 * - the same key with another request is 422, whether the first is in progress or completed;
 * - a failure releases the lock (compare-and-delete: only while this request's token holds it)
 *   and stores nothing, so the retry runs;
 * - a store that cannot be reached fails closed at once: 503 `Idempotency store unavailable`,
 *   nothing runs.
 *
 * The lock is an optimisation, not the guarantee: the work itself is fenced by Postgres (a unique
 * (caller, key)), so a lock that expired mid-flight or a store that lost everything can make a
 * request wait or replay from the database, never charge twice.
 */

/** The lock as it is held: a random token (whose holder may release it) and the request's fingerprint. */
export interface Lock {
  token: string;
  fingerprint: string;
}

/** A completed request as it is stored. */
export interface CompletedRecord {
  fingerprint: string;
  response: StoredResponse;
}

/** What the store answers when a request with a key arrives, decided atomically. */
export type Claim =
  | { kind: 'acquired' }
  | { kind: 'completed'; record: CompletedRecord }
  /** Another request holds the lock; `fingerprint` is its request's, `remainingMs` the lock's time left. */
  | { kind: 'locked'; fingerprint: string; remainingMs: number };

export interface IdempotencyStore {
  /** The completed record if there is one; else the lock for `lock` (if free); else who holds it. One atomic step. */
  claim(id: string, lock: Lock, lockMs: number): Promise<Claim>;
  /** Stores the record for `ttlMs`, then releases the lock if `lock` still holds it. */
  complete(id: string, lock: Lock, record: CompletedRecord, ttlMs: number): Promise<void>;
  /** Compare-and-delete: frees the lock only while `lock` holds it (never another request's). */
  release(id: string, lock: Lock): Promise<void>;
  /** Readiness: rejects while the store cannot be reached. */
  ping(): Promise<void>;
}

export interface IdempotentRequest {
  /** The caller's user id: keys of different callers never meet. */
  caller: number;
  key: string;
  fingerprint: string;
}

export type IdempotencyOutcome = 'first' | 'replay' | 'in_progress' | 'reused' | 'failed' | 'unavailable';

export class Idempotency {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly opts: {
      lockMs: number;
      responseTtlMs: number;
      logger?: Logger | undefined;
      /** Counts each request's outcome: first, replay, in_progress, reused, failed, unavailable. */
      outcomes?: { inc(labels: { outcome: IdempotencyOutcome }): void } | undefined;
    },
  ) {}

  /**
   * Runs `work` at most once per (caller, key) while its response is stored; answers the stored
   * response (`replayed: true`) to a repeat. Only a completed `work` is stored: when it throws,
   * the lock is released and the error propagates.
   */
  async run(req: IdempotentRequest, work: () => Promise<Outcome>): Promise<Outcome> {
    // The client's key is hashed: bounded store keys, and no client text in them.
    const id = `${req.caller}:${sha256Hex(req.key)}`;
    const lock: Lock = { token: randomBytes(16).toString('hex'), fingerprint: req.fingerprint };
    let claim: Claim;
    try {
      claim = await this.store.claim(id, lock, this.opts.lockMs);
    } catch (err) {
      this.count('unavailable');
      this.opts.logger?.error({ err }, 'idempotency store unavailable; refusing the request');
      throw unavailable(STORE_UNAVAILABLE);
    }
    if (claim.kind === 'completed') {
      if (claim.record.fingerprint !== req.fingerprint) throw (this.count('reused'), keyReused());
      this.count('replay');
      return { response: claim.record.response, replayed: true };
    }
    if (claim.kind === 'locked') {
      if (claim.fingerprint !== req.fingerprint) throw (this.count('reused'), keyReused());
      this.count('in_progress');
      throw new RequestInProgress(retryAfterSeconds(claim.remainingMs));
    }

    let outcome: Outcome;
    try {
      outcome = await work();
      this.count('first');
    } catch (err) {
      this.count('failed');
      await this.store.release(id, lock).catch((releaseErr: unknown) =>
        // The lock expires by itself; until then a retry is told to wait (409), never run twice.
        this.opts.logger?.warn({ err: releaseErr }, 'could not release an idempotency lock'),
      );
      throw err;
    }
    try {
      await this.store.complete(id, lock, { fingerprint: req.fingerprint, response: outcome.response }, this.opts.responseTtlMs);
    } catch (err) {
      // The work is done and fenced in Postgres: a retry finds it there and replays it.
      this.opts.logger?.warn({ err }, 'could not store an idempotent response; the database will answer retries');
    }
    return outcome;
  }

  ping(): Promise<void> {
    return this.store.ping();
  }

  private count(outcome: IdempotencyOutcome): void {
    this.opts.outcomes?.inc({ outcome });
  }
}

/**
 * No lock and no stored responses: every request runs, and the database fence alone answers
 * repeats. For the benchmark that measures what the layer costs; refused in production.
 */
export const noIdempotencyStore: IdempotencyStore = {
  claim: () => Promise.resolve({ kind: 'acquired' }),
  complete: () => Promise.resolve(),
  release: () => Promise.resolve(),
  ping: () => Promise.resolve(),
};
