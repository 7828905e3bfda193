import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSchema, getOperationAST, parse } from 'graphql';
import { apiSchemaOf } from './changes';
import { analyse, readCostDirectives } from './cost';
import { checkOperation, DEFAULT_LIST_SIZE, MAX_OPERATION_COST } from './operations';

/**
 * The cost analysis the gateway's limits and the registry's push check share (./cost.ts): the
 * directives read from a supergraph's SDL, and an operation's estimate with the variables a
 * request sends, or with none (what the registry prices a pushed operation with).
 */

const SDL = `
  schema @link(url: "https://specs.apollo.dev/cost/v0.1", import: ["@cost", "@listSize"]) { query: Query mutation: Mutation }
  directive @link(url: String, as: String, import: [String]) repeatable on SCHEMA
  directive @cost(weight: Int!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR
  directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
  scalar Money @cost(weight: 3)
  type Item { id: ID! price: Money! related: [Item!]! heavy: Int @cost(weight: 50) }
  type Page { items: [Item!]! total: Int! }
  type Query {
    item(id: ID!): Item
    items(first: Int): [Item!]! @listSize(slicingArguments: ["first"], requireOneSlicingArgument: false)
    assumed(first: Int): [Item!]! @listSize(assumedSize: 7, slicingArguments: ["first"], requireOneSlicingArgument: false)
    page(first: Int): Page! @listSize(assumedSize: 5, slicingArguments: ["first"], sizedFields: ["items"], requireOneSlicingArgument: false)
  }
  type Mutation { touch(id: ID!): Item }
`;
const schema = buildSchema(SDL);
const directives = readCostDirectives(parse(SDL));

function cost(query: string, variables?: Record<string, unknown>, listSize = DEFAULT_LIST_SIZE): number {
  const document = parse(query);
  return analyse(schema, document, getOperationAST(document)!, directives, listSize).cost(variables);
}

describe('readCostDirectives', () => {
  it('reads @cost and @listSize by schema coordinate', () => {
    expect(directives.types.get('Money')).toBe(3);
    expect(directives.fields.get('Item.heavy')).toBe(50);
    expect(directives.listSizes.get('Query.page')).toEqual({
      assumedSize: 5,
      slicingArguments: ['first'],
      sizedFields: ['items'],
      requireOneSlicingArgument: false,
    });
  });
});

describe('analyse: the estimated cost', () => {
  it.each([
    // Objects 1, scalars 0, a scalar type's weight, a field's own weight.
    ['{ item(id: "1") { id } }', 1],
    ['{ item(id: "1") { price heavy } }', 1 + 3 + 50],
    // A list nothing sizes: the default list size, per level.
    ['{ item(id: "1") { related { related { id } } } }', 1 + 10 * (1 + 10)],
    // A literal slicing argument; a connection sizes its sizedFields, the page itself one object.
    ['{ items(first: 3) { id } }', 3],
    ['{ page(first: 4) { items { id } } }', 1 + 4],
    // Mutations start at 10.
    ['mutation { touch(id: "1") { id } }', 11],
  ])('%s → %i', (query, expected) => {
    expect(cost(query)).toBe(expected);
  });

  it('a slicing argument from a variable: the value sent, else the variable’s default', () => {
    const q = 'query ($n: Int = 25) { items(first: $n) { id price } }';
    expect(cost(q)).toBe(25 * (1 + 3));
    expect(cost(q, {})).toBe(25 * (1 + 3));
    expect(cost(q, { n: 2 })).toBe(2 * (1 + 3));
    expect(cost('query ($n: Int = 40) { page(first: $n) { items { id } } }')).toBe(1 + 40);
  });

  it('a slicing variable absent and without a default: the assumed size, else the default list size', () => {
    expect(cost('query ($n: Int) { items(first: $n) { id } }')).toBe(10);
    expect(cost('query ($n: Int) { items(first: $n) { id } }', undefined, 4)).toBe(4);
    expect(cost('query ($n: Int) { assumed(first: $n) { id } }')).toBe(7);
    expect(cost('query ($n: Int) { page(first: $n) { items { id } } }')).toBe(1 + 5);
  });
});

describe('checkOperation refuses an operation costlier than the limit', () => {
  it('with its name and estimated cost, the slicing size from a default or the fallback', () => {
    const limits = { costDirectives: directives };
    expect(checkOperation(schema, 'query Big($n: Int = 300) { items(first: $n) { price } }', limits)).toEqual({
      ok: false,
      name: 'Big',
      reason: `estimated cost 1200 exceeds the limit of ${MAX_OPERATION_COST}`,
    });
    expect(checkOperation(schema, 'query Fine($n: Int = 250) { items(first: $n) { price } }', limits)).toMatchObject({ ok: true });
    // No default: the default list size at every level, 10 × (1 + 10 × (1 + 10)).
    const nested = 'query Nested($n: Int) { items(first: $n) { related { related { id } } } }';
    expect(checkOperation(schema, nested, limits)).toMatchObject({ ok: false, reason: 'estimated cost 1110 exceeds the limit of 1000' });
    expect(checkOperation(schema, nested, { ...limits, maxCost: 1110 }).ok).toBe(true);
  });

  it('prices the committed supergraph by its own directives (catalog’s page size)', () => {
    const supergraph = readFileSync(resolve(__dirname, '../../../gateway/supergraph.graphql'), 'utf8');
    const limits = { costDirectives: readCostDirectives(parse(supergraph)) };
    const api = apiSchemaOf(supergraph);
    // products: @cost(weight: 2), its `limit` sizing `data`.
    const products = (limit: number) => `query Products($limit: Int = ${limit}) { products(limit: $limit) { data { id } } }`;
    expect(checkOperation(api, products(998), limits)).toMatchObject({ ok: true });
    expect(checkOperation(api, products(999), limits)).toEqual({
      ok: false,
      name: 'Products',
      reason: 'estimated cost 1001 exceeds the limit of 1000',
    });
  });
});
