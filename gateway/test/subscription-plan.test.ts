import { Supergraph } from '@apollo/federation-internals';
import { getOperationAST, parse, print, validate, type GraphQLSchema } from 'graphql';
import { prepareSupergraph } from '../src/auth';
import { planSubscription, readJoinMap, type JoinMap } from '../src/subscriptions/plan';
import { composeSupergraph } from './helpers';

/** Pure planning: how a subscription is split between chat (root field) and content (User). */
const CHAT = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@shareable"])
  type Message @key(fields: "id") { id: ID! chatId: ID! text: String! author: User reactions: [Reaction!]! }
  type Reaction { emoji: String! by: User }
  type User @key(fields: "id", resolvable: false) { id: ID! }
  type Query { messages(chatId: ID!): [Message!]! }
  type Subscription { newMessage(chatId: ID!): Message! }
`;
const CONTENT = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@tag", "@authenticated"])
  type User @key(fields: "id") { id: ID! name: String! email: String! @tag(name: "private") drafts: [Post!]! @authenticated posts(first: Int): [Post!]! }
  type Post { id: ID! title: String! }
  type Query { user(id: ID!): User }
`;
const PAYMENTS = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key"])
  type User @key(fields: "id") { id: ID! orders: [String!]! }
  type Query { noop: Int }
`;

function load(subgraphs: { name: string; sdl: string }[]): { schema: GraphQLSchema; join: JoinMap; auth: Set<string> } {
  const prepared = prepareSupergraph(composeSupergraph(subgraphs.map((s) => ({ ...s, url: 'http://127.0.0.1:1/graphql' }))));
  const auth = new Set([...prepared.policy.fields, ...prepared.policy.types]);
  return { schema: Supergraph.build(prepared.sdl).apiSchema().toGraphQLJSSchema(), join: readJoinMap(parse(prepared.sdl)), auth };
}

const { schema, join, auth } = load([
  { name: 'chat', sdl: CHAT },
  { name: 'content', sdl: CONTENT },
  { name: 'payments', sdl: PAYMENTS },
]);

function plan(query: string) {
  const document = parse(query);
  expect(validate(schema, document)).toEqual([]);
  return planSubscription(schema, join, document, getOperationAST(document)!, auth);
}

const squash = (s: string) => print(parse(s)).replace(/\s+/g, ' ');

describe('planSubscription', () => {
  it('forwards a selection chat resolves alone as it is, with no entity fetch', () => {
    const p = plan('subscription S($c: ID!) { newMessage(chatId: $c) { id text author { id } } }');
    expect(p.graph).toBe('chat');
    expect(p.rootKey).toBe('newMessage');
    expect(p.operationName).toBe('S');
    expect(p.fetches).toEqual([]);
    expect(squash(p.query)).toBe(squash('subscription S($c: ID!) { newMessage(chatId: $c) { id text author { id } } }'));
  });

  it("replaces content's part by the key and fetches it from content per event", () => {
    const p = plan('subscription { m: newMessage(chatId: "1") { text author { name posts(first: 2) { title } } } }');
    expect(p.rootKey).toBe('m');
    expect(squash(p.query)).toBe(squash('subscription { m: newMessage(chatId: "1") { text author { __typename id } } }'));
    expect(p.fetches).toHaveLength(1);
    const [f] = p.fetches;
    expect(f).toMatchObject({ path: ['m', 'author'], typeName: 'User', graph: 'content', keyFields: ['id'], variableNames: [] });
    expect(squash(f!.query)).toBe(
      squash(
        'query($haloRepresentations: [_Any!]!) { _entities(representations: $haloRepresentations) { ... on User { name posts(first: 2) { title } } } }',
      ),
    );
  });

  it('carries the variables the fetched part uses, and fragments are inlined first', () => {
    const p = plan(`
      subscription ($c: ID!, $n: Int) { newMessage(chatId: $c) { ...M } }
      fragment M on Message { id author { ...U } }
      fragment U on User { name posts(first: $n) { id } }
    `);
    expect(p.fetches[0]!.variableNames).toEqual(['n']);
    expect(p.fetches[0]!.query).toContain('$n: Int');
    expect(p.query).not.toContain('fragment');
    // $n is used by content's part only: chat would refuse an unused variable.
    expect(squash(p.query)).toBe(
      squash('subscription ($c: ID!) { newMessage(chatId: $c) { ... on Message { id author { __typename id } } } }'),
    );
  });

  it('finds entities inside lists (reactions[].by)', () => {
    const p = plan('subscription { newMessage(chatId: "1") { reactions { emoji by { name } } } }');
    expect(p.fetches.map((f) => f.path)).toEqual([['newMessage', 'reactions', 'by']]);
  });

  it('refuses a part no single subgraph resolves whole, before anything is sent', () => {
    expect(() => plan('subscription { newMessage(chatId: "1") { author { name orders } } }')).toThrow(
      expect.objectContaining({ extensions: { code: 'SUBSCRIPTION_SELECTION_UNSUPPORTED' } }),
    );
  });

  it('an author part that payments alone resolves goes to payments', () => {
    const p = plan('subscription { newMessage(chatId: "1") { author { orders } } }');
    expect(p.fetches[0]).toMatchObject({ graph: 'payments', keyFields: ['id'] });
  });

  it('a part nobody sees differently is shared by every subscriber; a private or @authenticated one is per caller', () => {
    expect(plan('subscription { newMessage(chatId: "1") { author { name posts { title } } } }').fetches[0]!.shared).toBe(true);
    expect(plan('subscription { newMessage(chatId: "1") { author { name email } } }').fetches[0]!.shared).toBe(false);
    expect(plan('subscription { newMessage(chatId: "1") { author { drafts { id } } } }').fetches[0]!.shared).toBe(false);
  });
});
