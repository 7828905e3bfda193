import type { Redis } from '@halo/kit/db';
import type { Claim, CompletedRecord, IdempotencyStore, Lock } from '../../domain/idempotency';

/**
 * The idempotency store in Redis, shared by every replica. Per (caller, key) two keys in one hash
 * slot (`{…}`, so the scripts also run on a cluster): `…:lock` holds `<token>:<fingerprint>` with
 * `PX <lockMs>`, `…:done` the completed record as JSON with `PX <ttlMs>`. Each operation is one
 * Lua script, so each is atomic and one round trip. The client must be the kit's `openRedis`
 * (no offline queue): while Redis is unreachable every call rejects at once.
 */

/** KEYS: done, lock. ARGV: lock value, lockMs. → {'done', json} | {'acquired'} | {'locked', value, pttl} */
const CLAIM = `
local done = redis.call('GET', KEYS[1])
if done then return {'done', done} end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'acquired'} end
return {'locked', redis.call('GET', KEYS[2]) or '', redis.call('PTTL', KEYS[2])}
`;

/** KEYS: done, lock. ARGV: record json, ttlMs, lock value. Stores, then compare-and-deletes the lock. */
const COMPLETE = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1
`;

/** KEYS: lock. ARGV: lock value. Deletes the lock only while this request's value is in it. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

interface Scripts {
  haloIdemClaim(done: string, lock: string, value: string, lockMs: number): Promise<[string, string?, number?]>;
  haloIdemComplete(done: string, lock: string, record: string, ttlMs: number, value: string): Promise<number>;
  haloIdemRelease(lock: string, value: string): Promise<number>;
}

const lockValue = (lock: Lock) => `${lock.token}:${lock.fingerprint}`;
/** The fingerprint inside a lock value (the token is hex, so the first ':' ends it). */
const fingerprintOf = (value: string) => value.slice(value.indexOf(':') + 1);

export class RedisIdempotencyStore implements IdempotencyStore {
  private readonly scripts: Scripts;

  constructor(
    private readonly redis: Redis,
    /** One namespace per deployment (and per test file): `halo:<schema>`. */
    private readonly prefix: string,
  ) {
    // defineCommand sends EVALSHA, and the script itself only when Redis does not know it yet.
    redis.defineCommand('haloIdemClaim', { numberOfKeys: 2, lua: CLAIM });
    redis.defineCommand('haloIdemComplete', { numberOfKeys: 2, lua: COMPLETE });
    redis.defineCommand('haloIdemRelease', { numberOfKeys: 1, lua: RELEASE });
    this.scripts = redis as unknown as Scripts;
  }

  /** The two keys of one (caller, key), in one hash slot. */
  keys(id: string): { done: string; lock: string } {
    const base = `${this.prefix}:idem:{${id}}`;
    return { done: `${base}:done`, lock: `${base}:lock` };
  }

  async claim(id: string, lock: Lock, lockMs: number): Promise<Claim> {
    const k = this.keys(id);
    const [kind, value = '', pttl = -2] = await this.scripts.haloIdemClaim(k.done, k.lock, lockValue(lock), lockMs);
    if (kind === 'acquired') return { kind };
    if (kind === 'done') return { kind: 'completed', record: JSON.parse(value) as CompletedRecord };
    // A script sees one instant, so the lock cannot vanish between SET and GET; were it gone, the
    // holder is unknown: wait and retry rather than judge its request.
    if (!value) return { kind: 'locked', fingerprint: lock.fingerprint, remainingMs: 0 };
    return { kind: 'locked', fingerprint: fingerprintOf(value), remainingMs: Math.max(0, pttl) };
  }

  async complete(id: string, lock: Lock, record: CompletedRecord, ttlMs: number): Promise<void> {
    const k = this.keys(id);
    await this.scripts.haloIdemComplete(k.done, k.lock, JSON.stringify(record), ttlMs, lockValue(lock));
  }

  async release(id: string, lock: Lock): Promise<void> {
    await this.scripts.haloIdemRelease(this.keys(id).lock, lockValue(lock));
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }
}
