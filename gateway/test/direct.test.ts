import { composeServices } from '@apollo/composition';
import { operationFromDocument, Supergraph } from '@apollo/federation-internals';
import type { GraphQLDataSource } from '@apollo/gateway';
import { QueryPlanner } from '@apollo/query-planner';
import { Kind, parse, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { directFetch, DirectPlans } from '../src/graphql/direct';

/**
 * Which operations one subgraph answers whole (ADR 0019, src/graphql/direct.ts), decided on query
 * plans made by @apollo/query-planner over a composed supergraph: only a single fetch of the
 * client's own selection qualifies, so the subgraph's answer is the response. The byte-for-byte
 * proof against Apollo Server is e2e/graphql-lean.test.ts.
 */
const LINK = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.5", import: ["@key", "@shareable", "@inaccessible"])';

const shop = `${LINK}
  type Query { products: [Product!]! product(id: ID!): Product node(id: ID!): Node shapes: [Shape!]! }
  type Mutation { rename(id: ID!, name: String!): Product }
  interface Node { id: ID! }
  type Product implements Node @key(fields: "id") { id: ID! name: String price: Float kind: Kind }
  enum Kind { BOOK GAME }
  type Circle { radius: Float }
  type Square { side: Float }
  union Shape = Circle | Square`;
const stock = `${LINK}
  type Product @key(fields: "id") { id: ID! stock: Int }`;

function supergraphOf(shopSdl: string) {
  const composed = composeServices([
    { name: 'shop', url: 'http://shop.invalid/graphql', typeDefs: parse(shopSdl) },
    { name: 'stock', url: 'http://stock.invalid/graphql', typeDefs: parse(stock) },
  ]);
  if (composed.errors) throw new Error(composed.errors.map((e) => e.message).join('\n'));
  const sdl = composed.supergraphSdl;
  const supergraph = Supergraph.build(sdl);
  return { sdl, supergraph, planner: new QueryPlanner(supergraph), apiSchema: supergraph.apiSchema().toGraphQLJSSchema() };
}

const { sdl, supergraph, planner, apiSchema } = supergraphOf(shop);
/** Data sources by name: the decision only needs to find the fetch's subgraph. */
const services: Record<string, GraphQLDataSource> = {
  shop: { process: () => Promise.reject(new Error('not fetched in this test')) },
  stock: { process: () => Promise.reject(new Error('not fetched in this test')) },
};

function planOf(query: string, operationName?: string) {
  const document = parse(query);
  const operation = document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && (!operationName || d.name?.value === operationName),
  )!;
  const plan = planner.buildQueryPlan(operationFromDocument(supergraph.apiSchema(), document, { operationName }));
  return { plan, operation };
}

const decide = (query: string, operationName?: string) => {
  const { plan, operation } = planOf(query, operationName);
  return directFetch(plan, operation, services);
};

describe('an operation one subgraph answers whole', () => {
  it.each<[string, string, string | undefined]>([
    ['a plain query', '{ products { id name price } }', undefined],
    ['aliases', '{ p: products { n: name id } }', undefined],
    ['variables', 'query ($id: ID!) { product(id: $id) { id name } }', undefined],
    ['a literal argument (the planner reprints "1" as 1)', '{ product(id: "1") { id name } }', undefined],
    ['__typename on an object type', '{ products { __typename id } }', undefined],
    ['__typename alone on a union (the concrete type names)', '{ shapes { __typename } }', undefined],
    ['an enum field', '{ products { id kind } }', undefined],
    ['one of two operations', 'query A { products { id } } query B { product(id: "1") { name } }', 'B'],
  ])('%s is direct', (_name, query, operationName) => {
    const direct = decide(query, operationName);
    expect(direct?.fetch.serviceName).toBe('shop');
    expect(direct?.service).toBe(services.shop);
  });

  it.each([
    ['fields from two subgraphs', '{ products { id name stock } }'],
    ['a fragment spread', '{ products { ...F } } fragment F on Product { id name }'],
    ['an inline fragment', '{ products { ... on Product { id } } }'],
    ['a directive', '{ products { id name @include(if: true) } }'],
    ['an interface (the planner adds __typename)', '{ node(id: "1") { id } }'],
    ["a union with its members' fields", '{ shapes { ... on Circle { radius } } }'],
    ['a mutation', 'mutation { rename(id: "1", name: "x") { id } }'],
    ['only __typename (no fetch at all)', '{ __typename }'],
  ])('%s is not', (_name, query) => {
    expect(decide(query)).toBeNull();
  });

  it('is not when the subgraph has no data source', () => {
    const { plan, operation } = planOf('{ products { id } }');
    expect(directFetch(plan, operation, { stock: services.stock })).toBeNull();
  });
});

describe('DirectPlans', () => {
  /** The executor's hook, as @apollo/gateway calls it for one execution. */
  function resolve(plans: DirectPlans, schema: GraphQLSchema, query: string) {
    const { plan, operation } = planOf(query);
    plans.resolved({
      queryPlan: plan,
      serviceMap: services,
      operationContext: { schema, operation, fragments: Object.create(null) as never },
      requestContext: {} as never,
    });
    return operation;
  }

  it('knows an operation once the executor resolved its plan, for that API schema only', () => {
    const plans = new DirectPlans();
    plans.loaded({ apiSchema, supergraph: parse(sdl), policy: {} as never });
    const operation = resolve(plans, apiSchema, '{ products { id } }');
    expect(plans.lookup(apiSchema, operation)?.fetch.serviceName).toBe('shop');
    // A later supergraph: decided again by its own executions.
    const next = supergraphOf(shop).apiSchema;
    expect(plans.lookup(next, operation)).toBeNull();
  });

  it('answers nothing directly for a supergraph that hides elements with @inaccessible', () => {
    const hidden = supergraphOf(shop.replace('kind: Kind', 'kind: Kind secret: String @inaccessible'));
    expect(hidden.sdl).toContain('specs.apollo.dev/inaccessible');
    const plans = new DirectPlans();
    plans.loaded({ apiSchema: hidden.apiSchema, supergraph: parse(hidden.sdl), policy: {} as never });
    const operation = resolve(plans, hidden.apiSchema, '{ products { id } }');
    expect(plans.lookup(hidden.apiSchema, operation)).toBeNull();
  });

  it('answers nothing directly for a schema whose supergraph it was never told of', () => {
    const plans = new DirectPlans();
    const operation = resolve(plans, apiSchema, '{ products { id } }');
    expect(plans.lookup(apiSchema, operation)).toBeNull();
  });
});
