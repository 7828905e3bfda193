import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Supergraph } from '@apollo/federation-internals';
import { getOperationAST, parse, type GraphQLSchema } from 'graphql';
import { prepareSupergraph } from '../src/auth';
import { analyse, readCostDirectives, type CostDirectives } from '../src/graphql/limits';
import { composeSupergraph } from './helpers';

/**
 * Depth and cost analysis on its own (src/graphql/limits.ts), against supergraphs composed here: the
 * numbers the gateway's limits compare (IBM cost spec as Apollo Router's demand control applies it).
 */

const SHOP = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@cost", "@listSize"])
  scalar Money @cost(weight: 3)
  enum Sort { NAME PRICE }
  type Item @key(fields: "id") {
    id: ID!
    name: String!
    price: Money!
    related: [Item!]!
    next: Item
    heavy: Int @cost(weight: 50)
  }
  type Page { items: [Item!]! total: Int! }
  input Filter { name: String @cost(weight: 4) tags: [String!] }
  type Query {
    item(id: ID!): Item
    items(first: Int, last: Int): [Item!]! @listSize(slicingArguments: ["first", "last"], requireOneSlicingArgument: false)
    strict(first: Int): [Item!]! @listSize(assumedSize: 7, slicingArguments: ["first"])
    assumed: [Item!]! @listSize(assumedSize: 3)
    page(first: Int, filter: Filter, sort: Sort @cost(weight: 2)): Page!
      @listSize(assumedSize: 5, slicingArguments: ["first"], sizedFields: ["items"], requireOneSlicingArgument: false)
    search(filter: Filter): [Item!]!
    weighted: Item @cost(weight: 20)
  }
  type Mutation { touch(id: ID!): Item }
`;
const OTHER = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key"])
  type Item @key(fields: "id") { id: ID! reviews: [String!]! }
`;

function load(subgraphs: { name: string; sdl: string }[]): { schema: GraphQLSchema; directives: CostDirectives } {
  const sdl = prepareSupergraph(composeSupergraph(subgraphs.map((s) => ({ ...s, url: 'http://127.0.0.1:1/graphql' })))).sdl;
  return {
    schema: Supergraph.build(sdl).apiSchema().toGraphQLJSSchema(),
    directives: readCostDirectives(parse(sdl)),
  };
}

const { schema, directives } = load([
  { name: 'catalog', sdl: SHOP },
  { name: 'content', sdl: OTHER },
]);

function measure(query: string, variables?: Record<string, unknown>, listSize = 10) {
  const document = parse(query);
  const operation = getOperationAST(document)!;
  const a = analyse(schema, document, operation, directives, listSize);
  return { depth: a.depth, cost: a.cost(variables) };
}

describe('reading @cost and @listSize from the supergraph', () => {
  it('finds them by the names the cost link gives, on fields, types and arguments', () => {
    expect(directives.fields.get('Item.heavy')).toBe(50);
    expect(directives.fields.get('Query.weighted')).toBe(20);
    expect(directives.types.get('Money')).toBe(3);
    expect(directives.inputs.get('Query.page(sort:)')).toBe(2);
    expect(directives.inputs.get('Filter.name')).toBe(4);
    expect(directives.listSizes.get('Query.page')).toEqual({
      assumedSize: 5,
      slicingArguments: ['first'],
      sizedFields: ['items'],
      requireOneSlicingArgument: false,
    });
    // The directive's own default.
    expect(directives.listSizes.get('Query.strict')?.requireOneSlicingArgument).toBe(true);
  });

  it('follows a renamed link and renamed imports', () => {
    const sdl = `
      schema @link(url: "https://specs.apollo.dev/link/v1.0")
        @link(url: "https://specs.apollo.dev/cost/v0.1", as: "price", import: [{ name: "@listSize", as: "@size" }]) { query: Query }
      type Query { a: [Int] @price(weight: 9) @size(assumedSize: 2) b: Int @cost(weight: 1) }`;
    const read = readCostDirectives(parse(sdl));
    expect(read.fields.get('Query.a')).toBe(9);
    expect(read.listSizes.get('Query.a')?.assumedSize).toBe(2);
    // `@cost` here is not the cost spec's directive.
    expect(read.fields.has('Query.b')).toBe(false);
  });

  it('reads nothing from a supergraph that does not link the cost spec', () => {
    const sdl = readFileSync(resolve(__dirname, '../supergraph.graphql'), 'utf8').replace(
      /@link\(url: "https:\/\/specs\.apollo\.dev\/cost[^)]*\)/,
      '',
    );
    const read = readCostDirectives(parse(sdl));
    expect(read.fields.size + read.types.size + read.listSizes.size).toBe(0);
  });

  it('reads the committed supergraph: catalog prices products by page size', () => {
    const read = readCostDirectives(parse(readFileSync(resolve(__dirname, '../supergraph.graphql'), 'utf8')));
    expect(read.fields.get('Query.products')).toBe(2);
    expect(read.listSizes.get('Query.products')).toMatchObject({ slicingArguments: ['limit'], sizedFields: ['data'] });
  });
});

describe('depth', () => {
  it.each([
    ['{ item(id: "1") { id } }', 2],
    ['{ item(id: "1") { next { next { name } } } }', 4],
    ['{ item(id: "1") { __typename next { __typename } } }', 2],
    ['{ item(id: "1") { ...F } } fragment F on Item { next { id } }', 3],
    ['{ item(id: "1") { ... on Item { next { ... { id } } } } }', 3],
    ['{ __schema { types { fields { type { name } } } } item(id: "1") { id } }', 2],
  ])('%s → %i', (query, depth) => {
    expect(measure(query).depth).toBe(depth);
  });
});

describe('cost', () => {
  it.each([
    // Objects 1, scalars and enums 0.
    ['{ item(id: "1") { id name } }', 1],
    ['{ item(id: "1") { next { id } } }', 2],
    // A scalar type's weight, a field's weight (which replaces its type's).
    ['{ item(id: "1") { price } }', 4],
    ['{ item(id: "1") { heavy } }', 51],
    ['{ weighted { id } }', 20],
    // A list without a size: the default list size.
    ['{ item(id: "1") { related { id } } }', 11],
    ['{ item(id: "1") { related { related { id } } } }', 1 + 10 * (1 + 10)],
    // Slicing arguments (the largest given), assumedSize, the default.
    ['{ items(first: 3) { id } }', 3],
    ['{ items(first: 3, last: 8) { id } }', 8],
    ['{ items { id } }', 10],
    ['{ assumed { id } }', 3],
    // requireOneSlicingArgument: none given → the assumed size.
    ['{ strict { id } }', 7],
    ['{ strict(first: 2) { id } }', 2],
    // sizedFields: the page's size applies to its items; the page itself is one object.
    ['{ page(first: 4) { items { id } total } }', 1 + 4],
    ['{ page { items { id } } }', 1 + 5],
    // Arguments: weights, input objects 1 plus their weighted fields.
    ['{ page(sort: NAME) { total } }', 1 + 2],
    ['{ page(filter: { name: "x", tags: ["a"] }) { total } }', 1 + 1 + 4],
    // Aliases each count; __typename and introspection are free.
    ['{ a: item(id: "1") { id } b: item(id: "2") { id } __typename }', 2],
    ['{ __schema { types { name fields { name } } } }', 0],
    // A literal @skip/@include removes a field; a variable one counts.
    ['{ item(id: "1") { id next @skip(if: true) { id } } }', 1],
    ['{ item(id: "1") { id next @include(if: false) { id } } }', 1],
    ['query ($s: Boolean!) { item(id: "1") { next @skip(if: $s) { id } } }', 2],
    // Mutations start at 10.
    ['mutation { touch(id: "1") { id } }', 11],
    // Fragments and inline fragments count their fields where they are spread.
    ['{ item(id: "1") { ...F ...F } } fragment F on Item { next { id } }', 3],
    ['{ items(first: 2) { ... on Item { next { id } } } }', 2 * 2],
  ])('%s → %i', (query, cost) => {
    expect(measure(query).cost).toBe(cost);
  });

  it('honours variables, their defaults, and sizes inside a fragment', () => {
    const q = 'query ($n: Int = 4) { items(first: $n) { ...F } } fragment F on Item { id next { id } }';
    expect(measure(q).cost).toBe(4 * 2);
    expect(measure(q, { n: 30 }).cost).toBe(30 * 2);
    expect(measure(q, { n: null }).cost).toBe(10 * 2);
    const page = 'query ($p: Int) { page(first: $p) { items { ...G } } } fragment G on Item { related { id } }';
    expect(measure(page, { p: 2 }).cost).toBe(1 + 2 * (1 + 10));
    const input = 'query ($f: Filter) { search(filter: $f) { id } }';
    expect(measure(input, { f: { name: 'a' } }).cost).toBe(1 + 4 + 10);
  });

  it('uses the configured default list size', () => {
    expect(measure('{ item(id: "1") { related { id } } }', undefined, 3).cost).toBe(1 + 3);
  });

  it('the same analysis answers every request: only the variables change the number', () => {
    const document = parse('query ($n: Int) { items(first: $n) { id } }');
    const a = analyse(schema, document, getOperationAST(document)!, directives, 10);
    expect([a.cost({ n: 1 }), a.cost({ n: 99 }), a.cost({})]).toEqual([1, 99, 10]);
  });
});

describe('hostile documents terminate quickly', () => {
  it('a fragment cycle (which validation refuses first) measures as unbounded, not as a stack overflow', () => {
    const m = measure('{ item(id: "1") { ...A } } fragment A on Item { next { ...B } } fragment B on Item { next { ...A } }');
    expect(m.depth).toBe(Number.MAX_SAFE_INTEGER);
    expect(m.cost).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('fragments spreading fragments exponentially are analysed in linear time', () => {
    const levels = 60;
    const fragments = Array.from({ length: levels }, (_, i) =>
      i === 0 ? 'fragment F0 on Item { next { id } }' : `fragment F${i} on Item { ...F${i - 1} ...F${i - 1} }`,
    );
    const started = Date.now();
    const m = measure(`{ item(id: "1") { ...F${levels - 1} } } ${fragments.join(' ')}`);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(m.depth).toBe(3);
    // 2^59 + 1, capped to the largest exact number.
    expect(m.cost).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('the same, with variables and inside a sized list', () => {
    const levels = 60;
    const fragments = Array.from({ length: levels }, (_, i) =>
      i === 0 ? 'fragment F0 on Page { items { id } }' : `fragment F${i} on Page { ...F${i - 1} ...F${i - 1} }`,
    );
    const started = Date.now();
    const m = measure(`query ($n: Int) { page(first: $n) { ...F${levels - 1} } } ${fragments.join(' ')}`, { n: 3 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(m.cost).toBeGreaterThan(1e15);
  });
});

describe('argument costs', () => {
  const ARGS = `
    extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@cost"])
    input Tag { name: String @cost(weight: 2) }
    type Query { find(ids: [ID!] @cost(weight: 3), tags: [Tag!]): Int }
  `;
  const s = load([{ name: 'content', sdl: ARGS }]);
  const cost = (query: string, variables?: Record<string, unknown>) => {
    const document = parse(query);
    return analyse(s.schema, document, getOperationAST(document)!, s.directives, 10).cost(variables);
  };

  it('a weighted list argument costs its weight plus its items’; input objects 1 plus their weighted fields', () => {
    expect(cost('{ find(ids: ["1", "2"]) }')).toBe(3 + 2 * 3);
    expect(cost('{ find(tags: [{ name: "a" }, { name: "b" }]) }')).toBe(2 * (1 + 2));
    expect(cost('query ($ids: [ID!]) { find(ids: $ids) }', { ids: ['1', '2', '3'] })).toBe(3 + 3 * 3);
    expect(cost('{ find }')).toBe(0);
  });
});
