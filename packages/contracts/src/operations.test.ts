import { buildSchema, Kind, parse, type OperationDefinitionNode } from 'graphql';
// The gateway's limits run this analysis: the reference the registry's depth must agree with.
import { analyse, NO_COST_DIRECTIVES } from './cost';
import { checkOperation, operationDepth } from './operations';

const schema = buildSchema(`
  type Query { user(id: ID!): User node(id: ID!): Node }
  interface Node { id: ID! }
  type User implements Node { id: ID! name: String friends: [User!]! posts: [Post!]! }
  type Post implements Node { id: ID! title: String author: User! }
`);
const operationOf = (doc: ReturnType<typeof parse>) =>
  doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
const depth = (body: string) => {
  const doc = parse(body);
  return operationDepth(schema, doc, operationOf(doc));
};

describe('operationDepth, as the gateway measures depth', () => {
  it.each([
    ['{ user(id: 1) { name } }', 2],
    ['{ user(id: 1) { friends { friends { posts { author { name } } } } } }', 6],
    // Fragments and inline fragments add no depth; the deepest branch counts.
    ['{ user(id: 1) { ...F } } fragment F on User { friends { ...G } } fragment G on User { posts { title } }', 4],
    ['{ node(id: 1) { ... on User { friends { name } } ... on Post { author { friends { id } } } } }', 4],
    // __typename and introspection count nothing; neither does a field a literal @skip/@include removes.
    ['{ user(id: 1) { __typename friends { __typename } } }', 2],
    ['{ __schema { types { fields { type { ofType { name } } } } } }', 0],
    ['{ user(id: 1) { friends @skip(if: true) { friends { name } } name } }', 2],
    ['query ($s: Boolean!) { user(id: 1) { friends @skip(if: $s) { name } } }', 3],
  ])('%s → %i, the gateway’s number', (body, expected) => {
    expect(depth(body)).toBe(expected);
    const doc = parse(body);
    expect(analyse(schema, doc, operationOf(doc), NO_COST_DIRECTIVES, 10).depth).toBe(expected);
  });

  it('a fragment cycle is unbounded', () => {
    expect(depth('{ user(id: 1) { ...A } } fragment A on User { friends { ...A } }')).toBe(Infinity);
  });
});

describe('checkOperation', () => {
  it('accepts a valid operation with fragments, with its name and coordinates', () => {
    expect(checkOperation(schema, 'query Friends { user(id: 1) { ...F } } fragment F on User { friends { name } }')).toEqual({
      ok: true,
      name: 'Friends',
      coordinates: ['ID', 'Query', 'Query.user', 'Query.user.id', 'String', 'User', 'User.friends', 'User.name'],
    });
    expect(checkOperation(schema, '{ user(id: 1) { id } }')).toMatchObject({ ok: true, name: '' });
  });

  it('refuses what does not parse, more or fewer than one operation, an invalid one, and one too deep', () => {
    expect(checkOperation(schema, '{ user(id: 1) {')).toEqual({
      ok: false,
      name: '',
      reason: expect.stringMatching(/^does not parse: Syntax Error/),
    });
    expect(checkOperation(schema, 'fragment F on User { id }')).toEqual({
      ok: false,
      name: '',
      reason: 'holds 0 operations: a document holds exactly one (and any fragments)',
    });
    expect(checkOperation(schema, 'query Q { user(id: 1) { id } } fragment F on User { id }')).toEqual({
      ok: false,
      name: 'Q',
      reason: 'invalid against the current API schema: Fragment "F" is never used.',
    });
    expect(checkOperation(schema, 'query Deep { user(id: 1) { friends { friends { name } } } }', { maxDepth: 3 })).toEqual({
      ok: false,
      name: 'Deep',
      reason: 'depth 4 exceeds the limit of 3',
    });
    expect(checkOperation(schema, 'query Deep { user(id: 1) { friends { friends { name } } } }', { maxDepth: 4 }).ok).toBe(true);
  });
});
