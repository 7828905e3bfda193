import { BREAK, parse, specifiedRules, validate, visit, type DocumentNode, type GraphQLSchema } from 'graphql';
import { LRUCache } from 'lru-cache';

/** A document the lean path executes, or `null`: Apollo answers it (it does not parse, validate…). */
export type Prepared = { document: DocumentNode } | null;

/** Parsed and validated documents, kept by query text (LRU), the ones Apollo must answer included. */
export class LeanDocuments {
  private readonly cache: LRUCache<string, { prepared: Prepared }>;

  constructor(
    private readonly schema: GraphQLSchema,
    max: number,
  ) {
    this.cache = new LRUCache<string, { prepared: Prepared }>({ max });
  }

  prepare(query: string): Prepared {
    let cached = this.cache.get(query);
    if (cached === undefined) {
      cached = { prepared: prepareDocument(this.schema, query) };
      this.cache.set(query, cached);
    }
    return cached.prepared;
  }
}

/** `__schema` and `__type`: the introspection fields (`__typename` is not one: every client needs it). */
export const isIntrospectionField = (name: string): boolean => name === '__schema' || name === '__type';

/** Whether a document selects an introspection field anywhere (the lean paths leave those to Apollo). */
export function asksForIntrospection(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Field(node) {
      if (!isIntrospectionField(node.name.value)) return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** Parsed and validated with graphql-js's rules, as Apollo does; null for what Apollo must answer. */
function prepareDocument(schema: GraphQLSchema, query: string): Prepared {
  let document: DocumentNode;
  try {
    document = parse(query);
  } catch {
    return null;
  }
  // Introspection is refused in production by an extra Apollo rule: Apollo keeps answering it.
  if (asksForIntrospection(document)) return null;
  if (validate(schema, document, specifiedRules).length > 0) return null;
  return { document };
}
