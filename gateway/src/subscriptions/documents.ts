import { GraphQLError, parse, specifiedRules, validate, type DocumentNode, type ValidationRule } from 'graphql';
import type { LoadedSupergraph } from '../graphql';
import { error } from './context';

const MAX_DOCUMENTS = 1000;

/**
 * Parsed and validated documents by text, per API schema (a client re-sends the same few), with
 * the same token cap and rules as HTTP operations. A document that does not parse or validate is
 * answered by its errors, codes kept.
 */
export class DocumentCache {
  private readonly documents = new WeakMap<object, Map<string, DocumentNode>>();

  constructor(
    private readonly parseOptions: { maxTokens: number },
    private readonly validationRules: readonly ValidationRule[],
  ) {}

  /** Whether `document` still validates against the API schema of `loaded`. */
  validates(loaded: LoadedSupergraph, document: DocumentNode): boolean {
    return validate(loaded.apiSchema, document, [...specifiedRules, ...this.validationRules]).length === 0;
  }

  get(loaded: LoadedSupergraph, query: string): DocumentNode | readonly GraphQLError[] {
    let cache = this.documents.get(loaded.apiSchema);
    if (!cache) this.documents.set(loaded.apiSchema, (cache = new Map<string, DocumentNode>()));
    const known = cache.get(query);
    if (known) return known;
    let document: DocumentNode;
    try {
      document = parse(query, this.parseOptions);
    } catch (err) {
      return [error((err as Error).message, 'GRAPHQL_PARSE_FAILED')];
    }
    const errors = validate(loaded.apiSchema, document, [...specifiedRules, ...this.validationRules]);
    if (errors.length > 0) {
      return errors.map((e) => {
        const own = e.extensions.code;
        return new GraphQLError(e.message, {
          nodes: e.nodes ?? null,
          extensions: { ...e.extensions, code: typeof own === 'string' ? own : 'GRAPHQL_VALIDATION_FAILED' },
        });
      });
    }
    if (cache.size >= MAX_DOCUMENTS) cache.clear();
    cache.set(query, document);
    return document;
  }
}
