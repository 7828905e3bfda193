import { createHash } from 'node:crypto';
import { asksForIntrospection } from '@halo/kit/graphql';
import { GraphQLError, parse, specifiedRules, validate, type DocumentNode, type GraphQLSchema, type ValidationRule } from 'graphql';
import { LRUCache } from 'lru-cache';

/**
 * What the documents kept may hold, counted as 4 bytes per character of query text (the text as
 * the key, a string literal's copy in the tree, the tree itself: GRAPHQL_MAX_TOKENS bounds its
 * nodes, not a literal's length). A client sending many distinct large queries (a 1 MB body can be
 * one valid string literal) churns this budget, not the gateway's heap. One query text over
 * `LARGEST_KEPT` characters is parsed every time, never kept.
 */
export const DOCUMENT_BUDGET_BYTES = 8 * 1024 * 1024;
const LARGEST_KEPT = 64 * 1024;

/** A query text judged against one API schema: the document ready to run, or why it cannot run. */
export type JudgedDocument =
  | {
      document: DocumentNode;
      /** The SHA-256 of the text, hex (what Apollo's executor is handed as `queryHash`). */
      queryHash: string;
      /** It asks for `__schema` or `__type` (then only Apollo Server's path answers it on HTTP). */
      introspects: boolean;
    }
  | { errors: readonly GraphQLError[] };

/** A cache of documents by text: bounded in entries and in memory. */
export function documentCache<V extends object>(max = 1000): LRUCache<string, V> {
  return new LRUCache<string, V>({
    max,
    maxSize: DOCUMENT_BUDGET_BYTES,
    maxEntrySize: LARGEST_KEPT * 4,
    sizeCalculation: (_value, query) => Math.max(1, query.length * 4),
  });
}

/**
 * The edge's document step, one for every path that parses a document itself (the lean path,
 * WebSocket and SSE; Apollo Server keeps its own, with the same options): parsed with the token
 * cap, validated with graphql-js's rules and the edge's (alias cap, introspection when off),
 * kept by text with the schema it was judged against, so a new supergraph judges it again. A
 * document that does not parse or validate is kept too, as its errors (codes as Apollo gives them).
 */
export class Documents {
  private readonly cache: LRUCache<string, { schema: GraphQLSchema; judged: JudgedDocument }>;
  private readonly rules: readonly ValidationRule[];

  constructor(
    private readonly parseOptions: { maxTokens: number },
    validationRules: readonly ValidationRule[],
    max = 1000,
  ) {
    this.rules = [...specifiedRules, ...validationRules];
    this.cache = documentCache(max);
  }

  judge(schema: GraphQLSchema, query: string): JudgedDocument {
    const known = this.cache.get(query);
    if (known?.schema === schema) return known.judged;
    const judged = this.judgeNow(schema, query);
    this.cache.set(query, { schema, judged });
    return judged;
  }

  /** Whether `document` still validates against `schema` (a subscription's, after a new supergraph). */
  validates(schema: GraphQLSchema, document: DocumentNode): boolean {
    return validate(schema, document, this.rules).length === 0;
  }

  private judgeNow(schema: GraphQLSchema, query: string): JudgedDocument {
    let document: DocumentNode;
    try {
      document = parse(query, this.parseOptions);
    } catch (err) {
      return { errors: [new GraphQLError((err as Error).message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })] };
    }
    const errors = validate(schema, document, this.rules);
    if (errors.length > 0) {
      return {
        errors: errors.map((e) => {
          const own = e.extensions.code;
          return new GraphQLError(e.message, {
            nodes: e.nodes ?? null,
            extensions: { ...e.extensions, code: typeof own === 'string' ? own : 'GRAPHQL_VALIDATION_FAILED' },
          });
        }),
      };
    }
    return { document, queryHash: createHash('sha256').update(query).digest('hex'), introspects: asksForIntrospection(document) };
  }
}
