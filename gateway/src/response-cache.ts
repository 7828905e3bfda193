import { HeaderMap, type ApolloServerPlugin, type GraphQLRequestContext } from '@apollo/server';
import { print, type DocumentNode, type FormattedExecutionResult, type GraphQLSchema } from 'graphql';

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

  /** Stores `body` for `maxAgeS` seconds; an answer larger than the whole cache is not stored. */
  set(key: string, body: string, maxAgeS: number): void {
    const size = key.length + body.length;
    if (size > this.maxBytes || maxAgeS <= 0) return;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.size;
    }
    const storedAt = this.now();
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

/** What the plugin needs of the request context: whether the caller presented credentials. */
export interface AnonymityContext {
  caller: unknown;
  authorization?: string | undefined;
}

/** A document printed once (Apollo reuses one DocumentNode per query text): whitespace, commas and comments do not split the key. */
const printed = new WeakMap<DocumentNode, string>();
/** One number per loaded supergraph: a new one never serves answers of the previous one. */
const schemaIds = new WeakMap<GraphQLSchema, number>();
let nextSchemaId = 0;

function keyOf(ctx: GraphQLRequestContext<AnonymityContext>): string | null {
  const { document, schema, operationName } = ctx;
  if (!document) return null;
  let text = printed.get(document);
  if (text === undefined) {
    text = print(document);
    printed.set(document, text);
  }
  let schemaId = schemaIds.get(schema);
  if (schemaId === undefined) schemaIds.set(schema, (schemaId = nextSchemaId++));
  const variables = ctx.request.variables;
  return `${schemaId}\n${operationName ?? ''}\n${variables ? JSON.stringify(variables) : ''}\n${text}`;
}

/** Answers only anonymous callers' queries may come from or go to the shared cache. */
const mayUse = (ctx: GraphQLRequestContext<AnonymityContext>) =>
  ctx.operation?.operation === 'query' && !ctx.contextValue.caller && !ctx.contextValue.authorization;

/**
 * The edge response cache (issue 12, S1c): an anonymous caller's query whose answer came back
 * without errors under a `public` Cache-Control policy with maxAge > 0 (the subgraphs'
 * `@cacheControl` hints, as @apollo/gateway combines them) is stored for that maxAge, keyed by
 * the supergraph, operation name, variables and printed document. A hit skips planning and every
 * subgraph: it answers with `Age` and the remaining max-age. It runs after the edge's checks
 * (limits, `@authenticated`, trusted documents), which it never bypasses. Mutations, callers with
 * credentials, private or uncacheable policies and answers with errors never touch it.
 */
export function responseCachePlugin<TContext extends AnonymityContext>(store: ResponseCacheStore): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      let key: string | null = null;
      let hit = false;
      return {
        async responseForOperation(ctx) {
          if (!mayUse(ctx)) return null;
          key = keyOf(ctx);
          const entry = key === null ? undefined : store.get(key);
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
          const result = ctx.response.body.singleResult;
          if (result.errors) return;
          const policy = ctx.overallCachePolicy.policyIfCacheable();
          if (!policy || policy.scope !== 'PUBLIC' || policy.maxAge <= 0) return;
          store.set(key, JSON.stringify(result), policy.maxAge);
        },
      };
    },
  };
}
