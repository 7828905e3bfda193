import { createHash } from 'node:crypto';
import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { OperationTypeNode, print, printSchema, type DocumentNode, type FormattedExecutionResult, type GraphQLSchema } from 'graphql';
import type { Redis } from '@halo/kit/db';
import type { Logger } from '@halo/kit/logging';

/** One stored answer: its JSON, when it was stored and until when it may be served. */
interface Entry {
  body: string;
  storedAt: number;
  maxAgeS: number;
  expiresAt: number;
  size: number;
}

/**
 * An in-process LRU of serialised answers, bounded by an approximate size in bytes (string
 * lengths of key and body: close to bytes for the ASCII JSON GraphQL answers mostly are).
 * Expired entries are dropped when read or when they reach the cold end.
 */
export class ResponseCacheStore {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Lookups of the plugin that found an answer (in this process or the shared tier), and that did not. */
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get usedBytes(): number {
    return this.bytes;
  }

  /** The live answer under `key` (marked recently used) and its age in whole seconds, or undefined. */
  get(key: string): { body: string; ageS: number; maxAgeS: number } | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    const now = this.now();
    if (entry.expiresAt <= now) {
      this.bytes -= entry.size;
      return undefined;
    }
    this.entries.set(key, entry);
    return { body: entry.body, ageS: Math.floor((now - entry.storedAt) / 1000), maxAgeS: entry.maxAgeS };
  }

  /** Whether an answer of this size can be kept at all. */
  fits(key: string, body: string): boolean {
    return key.length + body.length <= this.maxBytes;
  }

  /**
   * Stores `body` for `maxAgeS` seconds from `storedAt` (now, or when another replica stored it);
   * an answer larger than the whole cache, or already expired, is not stored.
   */
  set(key: string, body: string, maxAgeS: number, storedAt = this.now()): void {
    const size = key.length + body.length;
    if (size > this.maxBytes || maxAgeS <= 0 || storedAt + maxAgeS * 1000 <= this.now()) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.size;
    }
    this.entries.set(key, { body, storedAt, maxAgeS, expiresAt: storedAt + maxAgeS * 1000, size });
    this.bytes += size;
    // Map iteration order is insertion order: the first entries are the least recently used.
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= e.size;
    }
  }
}

/** An answer as another replica stored it: when, for how long, and its JSON. */
export interface SharedAnswer {
  body: string;
  storedAt: number;
  maxAgeS: number;
}

/**
 * The tier every gateway replica shares (with `REDIS_URL`): an answer one replica stored is served
 * by the others, and each keeps a copy in its own LRU for what remains of its max-age. Keys are
 * the SHA-256 of the local key under the gateway's Redis prefix; the value is
 * `<storedAt ms>\n<maxAge s>\n<JSON>`, expiring in Redis when it stops being servable. Redis
 * being away is never the client's problem: a read misses and a write is skipped (the kit's
 * client logs the outage once).
 */
export class RedisResponseTier {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  private key(key: string): string {
    return `${this.prefix}response:${createHash('sha256').update(key).digest('base64url')}`;
  }

  async get(key: string): Promise<SharedAnswer | undefined> {
    let value: string | null;
    try {
      value = await this.redis.get(this.key(key));
    } catch {
      return undefined;
    }
    if (value === null) return undefined;
    const a = value.indexOf('\n');
    const b = value.indexOf('\n', a + 1);
    const storedAt = Number(value.slice(0, a));
    const maxAgeS = Number(value.slice(a + 1, b));
    if (a === -1 || b === -1 || !Number.isFinite(storedAt) || !Number.isFinite(maxAgeS)) return undefined;
    return { storedAt, maxAgeS, body: value.slice(b + 1) };
  }

  async set(key: string, answer: SharedAnswer): Promise<void> {
    const ttlMs = answer.storedAt + answer.maxAgeS * 1000 - this.now();
    if (ttlMs <= 0) return;
    try {
      await this.redis.set(this.key(key), `${answer.storedAt}\n${answer.maxAgeS}\n${answer.body}`, 'PX', ttlMs);
    } catch (err) {
      this.logger.debug({ err: (err as Error).message }, 'response not shared');
    }
  }
}

/** What the plugin needs of the request context: whether the caller presented credentials. */
export interface AnonymityContext {
  caller: unknown;
  authorization?: string | undefined;
}

/** A document printed once (each path reuses one DocumentNode per query text): whitespace, commas and comments do not split the key. */
const printed = new WeakMap<DocumentNode, string>();
/**
 * A digest of each loaded API schema: a new supergraph never serves answers of the previous one,
 * and replicas on the same supergraph (and only those) share entries. Printed once per schema.
 */
const schemaIds = new WeakMap<GraphQLSchema, string>();

/** A live answer: its JSON (`{"data":…}`, as sent), its age and the max-age it was stored for. */
export interface CachedAnswer {
  body: string;
  ageS: number;
  maxAgeS: number;
}

/**
 * The edge response cache (issue 12, S1c), as both GraphQL paths use it: Apollo Server's (the
 * plugin below) and the lean path (ADR 0016), which share entries. An anonymous caller's query
 * whose answer came back without errors under a `public` Cache-Control policy with maxAge > 0
 * (the subgraphs' `@cacheControl` hints, as @apollo/gateway combines them) is stored for that
 * maxAge, keyed by the supergraph, operation name, variables and printed document. A hit skips
 * planning and every subgraph: it answers with `Age` and the remaining max-age. It is asked after
 * the edge's checks (limits, `@authenticated`, trusted documents), which it never bypasses.
 * Mutations, callers with credentials, private or uncacheable policies and answers with errors
 * never touch it.
 */
export class ResponseCache {
  constructor(
    readonly store: ResponseCacheStore,
    private readonly shared?: RedisResponseTier,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a request may be answered from (and its answer stored in) the cache: an anonymous caller's query. */
  static mayUse(operation: OperationTypeNode | undefined, context: AnonymityContext): boolean {
    return operation === OperationTypeNode.QUERY && !context.caller && !context.authorization;
  }

  /** The key of an operation's answer: the supergraph, the operation's name (null: unnamed), the variables, the printed document. */
  keyOf(schema: GraphQLSchema, document: DocumentNode, operationName: string | null, variables: unknown): string {
    let text = printed.get(document);
    if (text === undefined) {
      text = print(document);
      printed.set(document, text);
    }
    let schemaId = schemaIds.get(schema);
    if (schemaId === undefined) schemaIds.set(schema, (schemaId = createHash('sha256').update(printSchema(schema)).digest('base64url')));
    return `${schemaId}\n${operationName ?? ''}\n${variables ? JSON.stringify(variables) : ''}\n${text}`;
  }

  /** This replica's entry, or the one another replica shared (then kept here too); counted as a hit or a miss. */
  async lookup(key: string): Promise<CachedAnswer | undefined> {
    const found = await this.find(key);
    if (found) this.store.hits++;
    else this.store.misses++;
    return found;
  }

  private async find(key: string): Promise<CachedAnswer | undefined> {
    const local = this.store.get(key);
    if (local || !this.shared) return local;
    const remote = await this.shared.get(key);
    if (!remote) return undefined;
    const t = this.now();
    if (remote.storedAt + remote.maxAgeS * 1000 <= t) return undefined;
    this.store.set(key, remote.body, remote.maxAgeS, remote.storedAt);
    return { body: remote.body, ageS: Math.max(0, Math.floor((t - remote.storedAt) / 1000)), maxAgeS: remote.maxAgeS };
  }

  /**
   * Stores an answer sent without errors under its policy, if public with a max-age. The body is
   * written as both paths send an answer (`data`, then `extensions`), so a hit is sent as stored.
   */
  save(key: string, result: FormattedExecutionResult, policy: { maxAge: number; scope: string } | null): void {
    if (result.errors || !policy || policy.scope !== 'PUBLIC' || policy.maxAge <= 0) return;
    const body = JSON.stringify({ data: result.data, extensions: result.extensions });
    if (!this.store.fits(key, body)) return;
    const storedAt = this.now();
    this.store.set(key, body, policy.maxAge, storedAt);
    // Not awaited: the answer does not wait for Redis (a failed write is only a later miss).
    void this.shared?.set(key, { body, storedAt, maxAgeS: policy.maxAge });
  }
}

/** Apollo Server's side of the response cache (ResponseCache above). */
export function responseCachePlugin<TContext extends AnonymityContext>(cache: ResponseCache): ApolloServerPlugin<TContext> {
  /* eslint-disable @typescript-eslint/require-await -- Apollo Server types every plugin hook as returning a
     promise; written async, a hook that throws rejects as Apollo expects. */
  return {
    async requestDidStart() {
      let key: string | null = null;
      let hit = false;
      return {
        async responseForOperation(ctx) {
          if (!ResponseCache.mayUse(ctx.operation?.operation, ctx.contextValue)) return null;
          key = cache.keyOf(ctx.schema, ctx.document, ctx.operationName, ctx.request.variables);
          const entry = await cache.lookup(key);
          if (!entry) return null;
          hit = true;
          const { ageS, maxAgeS } = entry;
          // Apollo's cache-control plugin writes Cache-Control from this policy (live means
          // younger than maxAge, so at least a second remains).
          ctx.overallCachePolicy.replace({ maxAge: maxAgeS - ageS, scope: 'PUBLIC' });
          // Each hit parses its own copy: nothing downstream can change what the next one sees.
          return {
            http: { status: undefined, headers: new HeaderMap([['age', String(ageS)]]) },
            body: { kind: 'single', singleResult: JSON.parse(entry.body) as FormattedExecutionResult },
          };
        },
        async willSendResponse(ctx) {
          if (hit || key === null || ctx.response.body.kind !== 'single') return;
          cache.save(key, ctx.response.body.singleResult, ctx.overallCachePolicy.policyIfCacheable());
        },
      };
    },
  };
  /* eslint-enable @typescript-eslint/require-await */
}
