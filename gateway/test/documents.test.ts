import { buildSchema } from 'graphql';
import { DOCUMENT_BUDGET_BYTES, documentCache, Documents } from '../src/graphql/documents';
import { aliasLimitRule, noIntrospectionRule } from '../src/graphql/rules';

/**
 * The document step (src/graphql/documents.ts) keeps judged documents by query text for the lean
 * path, WebSocket and SSE. Query text is chosen by the client: many distinct large queries must
 * cost a bounded amount of memory, not one entry each.
 */
describe('the document cache', () => {
  it('holds at most its memory budget, however many large queries arrive', () => {
    const cache = documentCache<object>();
    // 60 KB of text each (under the per-entry cap): without the budget 1000 of them would be kept.
    for (let i = 0; i < 1000; i++) cache.set(`{ product(id: "${String(i).padEnd(60_000, 'x')}") { id } }`, {});
    expect(cache.calculatedSize).toBeLessThanOrEqual(DOCUMENT_BUDGET_BYTES);
    expect(cache.size).toBeLessThan(40);
    // The most recent stays.
    expect(cache.has(`{ product(id: "${'999'.padEnd(60_000, 'x')}") { id } }`)).toBe(true);
  });

  it('never keeps one query text larger than the per-entry cap', () => {
    const cache = documentCache<object>();
    const huge = `{ product(id: "${'y'.repeat(500_000)}") { id } }`;
    cache.set(huge, {});
    expect(cache.has(huge)).toBe(false);
    expect(cache.calculatedSize).toBe(0);
  });

  it('keeps many ordinary queries, up to its entry cap', () => {
    const cache = documentCache<object>(1000);
    for (let i = 0; i < 1500; i++) cache.set(`{ product(id: "${i}") { id name } }`, {});
    expect(cache.size).toBe(1000);
  });
});

describe('the document step', () => {
  const schema = buildSchema('type Query { product(id: ID!): Product } type Product { id: ID! name: String }');
  const documents = new Documents({ maxTokens: 50 }, [aliasLimitRule(2), noIntrospectionRule]);

  it('judges a text once per schema: the same document again, judged anew under another schema', () => {
    const first = documents.judge(schema, '{ product(id: "1") { id } }');
    expect(first).toEqual(expect.objectContaining({ introspects: false, queryHash: expect.stringMatching(/^[0-9a-f]{64}$/) }));
    expect(documents.judge(schema, '{ product(id: "1") { id } }')).toBe(first);
    const next = buildSchema('type Query { product(id: ID!): Product } type Product { id: ID! }');
    expect(documents.judge(next, '{ product(id: "1") { id } }')).not.toBe(first);
    expect(documents.judge(next, '{ product(id: "1") { name } }')).toEqual({ errors: [expect.anything()] });
  });

  it('answers what does not parse or validate by its errors, with the codes Apollo gives', () => {
    const codes = (query: string) => {
      const judged = documents.judge(schema, query);
      return 'errors' in judged ? judged.errors.map((e) => e.extensions.code) : [];
    };
    expect(codes('{ product(id: "1") { id }')).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(codes(`{ product(id: "1") { ${'id '.repeat(60)}} }`)).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(codes('{ product(id: "1") { nope } }')).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(codes('{ a: product(id: "1") { id } b: product(id: "2") { id } c: product(id: "3") { id } }')).toEqual(['MAX_ALIASES_LIMIT']);
    expect(codes('{ __schema { queryType { name } } }')).toEqual(['INTROSPECTION_DISABLED']);
  });

  it('tells introspection apart when it is allowed', () => {
    const open = new Documents({ maxTokens: 100 }, []);
    expect(open.judge(schema, '{ __type(name: "Product") { name } }')).toEqual(expect.objectContaining({ introspects: true }));
    expect(open.judge(schema, '{ __typename }')).toEqual(expect.objectContaining({ introspects: false }));
  });
});
