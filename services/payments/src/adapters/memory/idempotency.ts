import type { Claim, CompletedRecord, IdempotencyStore, Lock } from '../../domain/idempotency';

interface Entry<T> {
  value: T;
  expiresAt: number;
}

/**
 * The idempotency store in this process's memory, for the embedded mode (one payments process,
 * no Redis): the same rules as the Redis store, each operation synchronous and therefore atomic.
 * Expired entries are dropped when touched and by a sweep every minute (`sweep`).
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly locks = new Map<string, Entry<Lock>>();
  private readonly done = new Map<string, Entry<CompletedRecord>>();

  constructor(private readonly now: () => number = Date.now) {}

  private live<T>(map: Map<string, Entry<T>>, id: string): Entry<T> | undefined {
    const entry = map.get(id);
    if (entry && entry.expiresAt <= this.now()) {
      map.delete(id);
      return undefined;
    }
    return entry;
  }

  /* eslint-disable @typescript-eslint/require-await -- the in-memory twin of the Redis store keeps its
     async contract: whatever goes wrong (structuredClone of a record) rejects, as Redis would. */
  async claim(id: string, lock: Lock, lockMs: number): Promise<Claim> {
    const done = this.live(this.done, id);
    if (done) return { kind: 'completed', record: done.value };
    const held = this.live(this.locks, id);
    if (held) return { kind: 'locked', fingerprint: held.value.fingerprint, remainingMs: held.expiresAt - this.now() };
    this.locks.set(id, { value: lock, expiresAt: this.now() + lockMs });
    return { kind: 'acquired' };
  }

  async complete(id: string, lock: Lock, record: CompletedRecord, ttlMs: number): Promise<void> {
    // A copy, as Redis would hold one: later changes to the caller's objects do not reach it.
    this.done.set(id, { value: structuredClone(record), expiresAt: this.now() + ttlMs });
    this.releaseNow(id, lock);
  }

  async release(id: string, lock: Lock): Promise<void> {
    this.releaseNow(id, lock);
  }
  /* eslint-enable @typescript-eslint/require-await */

  private releaseNow(id: string, lock: Lock): void {
    const held = this.live(this.locks, id);
    if (held && held.value.token === lock.token) this.locks.delete(id);
  }

  async ping(): Promise<void> {}

  /** Drops every expired entry; the service runs it on a timer so memory stays bounded by the TTLs. */
  sweep(): void {
    const now = this.now();
    for (const map of [this.locks, this.done] as Map<string, Entry<unknown>>[]) {
      for (const [id, entry] of map) if (entry.expiresAt <= now) map.delete(id);
    }
  }

  get size(): number {
    return this.locks.size + this.done.size;
  }
}
