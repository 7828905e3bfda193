import { createHash } from 'node:crypto';
import { HeaderMap, type ApolloServerPlugin, type GraphQLRequestContext } from '@apollo/server';
import { OperationTypeNode, print, printSchema, type DocumentNode, type FormattedExecutionResult, type GraphQLSchema } from 'graphql';
import type { Logger, Redis } from '@halo/kit';

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

/** A document printed once (Apollo reuses one DocumentNode per query text): whitespace, commas and comments do not split the key. */
const printed = new WeakMap<DocumentNode, string>();
/**
 * A digest of each loaded API schema: a new supergraph never serves answers of the previous one,
 * and replicas on the same supergraph (and only those) share entries. Printed once per schema.
 */
const schemaIds = new WeakMap<GraphQLSchema, string>();

function keyOf(ctx: GraphQLRequestContext<AnonymityContext>): string | null {
  const { document, schema, operationName } = ctx;
  if (!document) return null;
  let text = printed.get(document);
  if (text === undefined) {
    text = print(document);
    printed.set(document, text);
  }
  let schemaId = schemaIds.get(schema);
  if (schemaId === undefined) schemaIds.set(schema, (schemaId = createHash('sha256').update(printSchema(schema)).digest('base64url')));
  const variables = ctx.request.variables;
  return `${schemaId}\n${operationName ?? ''}\n${variables ? JSON.stringify(variables) : ''}\n${text}`;
}

/** Answers only anonymous callers' queries may come from or go to the shared cache. */
const mayUse = (ctx: GraphQLRequestContext<AnonymityContext>) =>
  ctx.operation?.operation === OperationTypeNode.QUERY && !ctx.contextValue.caller && !ctx.contextValue.authorization;

/**
 * The edge response cache (issue 12, S1c): an anonymous caller's query whose answer came back
 * without errors under a `public` Cache-Control policy with maxAge > 0 (the subgraphs'
 * `@cacheControl` hints, as @apollo/gateway combines them) is stored for that maxAge, keyed by
 * the supergraph, operation name, variables and printed document. A hit skips planning and every
 * subgraph: it answers with `Age` and the remaining max-age. It runs after the edge's checks
 * (limits, `@authenticated`, trusted documents), which it never bypasses. Mutations, callers with
 * credentials, private or uncacheable policies and answers with errors never touch it.
 */
export function responseCachePlugin<TContext extends AnonymityContext>(
  store: ResponseCacheStore,
  shared?: RedisResponseTier,
  now: () => number = Date.now,
): ApolloServerPlugin<TContext> {
  /** This replica's entry, or the one another replica shared (then kept here too). */
  async function lookup(key: string): Promise<{ body: string; ageS: number; maxAgeS: number } | undefined> {
    const local = store.get(key);
    if (local || !shared) return local;
    const remote = await shared.get(key);
    if (!remote) return undefined;
    const t = now();
    if (remote.storedAt + remote.maxAgeS * 1000 <= t) return undefined;
    store.set(key, remote.body, remote.maxAgeS, remote.storedAt);
    return { body: remote.body, ageS: Math.max(0, Math.floor((t - remote.storedAt) / 1000)), maxAgeS: remote.maxAgeS };
  }

  /* eslint-disable @typescript-eslint/require-await -- Apollo Server types every plugin hook as returning a
     promise; written async, a hook that throws rejects as Apollo expects. */
  return {
    async requestDidStart() {
      let key: string | null = null;
      let hit = false;
      return {
        async responseForOperation(ctx) {
          if (!mayUse(ctx)) return null;
          key = keyOf(ctx);
          const entry = key === null ? undefined : await lookup(key);
          if (!entry) {
            store.misses++;
            return null;
          }
          store.hits++;
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
          const result = ctx.response.body.singleResult;
          if (result.errors) return;
          const policy = ctx.overallCachePolicy.policyIfCacheable();
          if (!policy || policy.scope !== 'PUBLIC' || policy.maxAge <= 0) return;
          const body = JSON.stringify(result);
          if (!store.fits(key, body)) return;
          const storedAt = now();
          store.set(key, body, policy.maxAge, storedAt);
          // Not awaited: the answer does not wait for Redis (a failed write is only a later miss).
          void shared?.set(key, { body, storedAt, maxAgeS: policy.maxAge });
        },
      };
    },
  };
  /* eslint-enable @typescript-eslint/require-await */
}
