import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PersistedQueryOptions } from '@apollo/server';
import type { Redis } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';

/**
 * Persisted queries at the edge.
 *
 * Automatic persisted queries (APQ) are Apollo Server's: a client sends the query's SHA-256
 * alone; an unknown hash answers 200 PERSISTED_QUERY_NOT_FOUND, the client resends hash and query,
 * and the pair is registered (only once the operation passed validation, the limits and
 * `@authenticated`); a hash that does not match its query is a 400. Where they are kept is ours:
 * with `REDIS_URL` in a Redis every replica shares (`RedisQueryCache`), otherwise in the process.
 *
 * Trusted documents (`GRAPHQL_TRUSTED_DOCUMENTS`, off by default) are a manifest of operations
 * every client may send, by hash or in full: with the registry's lists, the registered operations
 * of ./registered.ts (which refuses the rest in `enforce`, the default when the file is set).
 */

/** Apollo Server's KeyValueCache (the version it depends on), as its APQ store. */
type QueryCache = NonNullable<PersistedQueryOptions['cache']>;

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** Apollo Server prefixes every APQ key with this before it reaches the cache. */
const APQ_PREFIX = 'apq:';

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Apollo's KeyValueCache over the kit's fail-fast ioredis client. Redis being away is never an
 * error for the client: a read misses (the client then sends its query in full) and a write is
 * skipped; both are logged once per outage by the client. Keys that cannot be a SHA-256 are never
 * looked up, so a client cannot make the gateway fetch arbitrary (or huge) keys.
 */
export class RedisQueryCache implements QueryCache {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  private key(key: string): string | null {
    const hash = key.startsWith(APQ_PREFIX) ? key.slice(APQ_PREFIX.length) : key;
    return SHA256_HEX.test(hash) ? `${this.prefix}${key}` : null;
  }

  async get(key: string): Promise<string | undefined> {
    const k = this.key(key);
    if (k === null) return undefined;
    try {
      return (await this.redis.get(k)) ?? undefined;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'persisted query lookup failed; treated as unknown');
      return undefined;
    }
  }

  async set(key: string, value: string, options?: { ttl?: number | null }): Promise<void> {
    const k = this.key(key);
    if (k === null) return;
    try {
      if (options?.ttl) await this.redis.set(k, value, 'EX', Math.ceil(options.ttl));
      else await this.redis.set(k, value);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'persisted query not stored');
    }
  }

  async delete(key: string): Promise<void> {
    const k = this.key(key);
    if (k === null) return;
    await this.redis.del(k).catch(() => undefined);
  }
}

/** The operations a trusted-documents manifest allows, by SHA-256 of their text. */
export type TrustedDocuments = ReadonlyMap<string, string>;

/**
 * Reads a manifest: Apollo's persisted query manifest
 * (`{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id","body",…}]}`) or a
 * plain `{"<sha256>": "<query>"}` object. Every id must be the SHA-256 of its body (that is what
 * clients send), or the file is refused.
 */
export function loadTrustedDocuments(path: string): TrustedDocuments {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`Cannot read the trusted documents at ${path} (GRAPHQL_TRUSTED_DOCUMENTS): ${(err as Error).message}`);
  }
  const entries: [string, unknown][] = [];
  if (raw && typeof raw === 'object' && Array.isArray((raw as { operations?: unknown }).operations)) {
    for (const op of (raw as { operations: { id?: unknown; body?: unknown }[] }).operations) entries.push([String(op?.id), op?.body]);
  } else if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    entries.push(...Object.entries(raw));
  } else {
    throw new Error(`The trusted documents at ${path} (GRAPHQL_TRUSTED_DOCUMENTS) are neither a manifest nor a hash → query object`);
  }
  const documents = new Map<string, string>();
  for (const [id, body] of entries) {
    if (typeof body !== 'string' || sha256(body) !== id) {
      throw new Error(`The trusted documents at ${path} (GRAPHQL_TRUSTED_DOCUMENTS): ${id} is not the SHA-256 of its query`);
    }
    documents.set(id, body);
  }
  return documents;
}
