import { isTakeoverChange, takeoverChanges } from './takeovers';

/** Subgraph SDLs shaped like Halo's: content owns User; payments adds orders to it; auth a stub. */
const LINK = (imports: string) => `extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: [${imports}])\n`;
const content = `${LINK('"@key"')}
type User @key(fields: "id") {
  id: ID!
  name: String!
  email: String!
  address: Address
}
type Address { city: String! street: String! }
type Query { user(id: ID!): User }`;
const payments = `${LINK('"@key"')}
type User @key(fields: "id") { id: ID! orders: [Order!]! }
type Order @key(fields: "id") { id: ID! user: User! }`;
const auth = `${LINK('"@key"')}
type User @key(fields: "id", resolvable: false) { id: ID! }
type Query { me: User }`;
const OTHERS = [
  { service: 'content', sdl: content },
  { service: 'payments', sdl: payments },
  { service: 'auth', sdl: auth },
];

/** catalog's own SDL with `extra` appended (its Product is its own). */
const catalog = (extra = '', imports = '"@key"') => `${LINK(imports)}
type Product @key(fields: "id") { id: ID! name: String! price: Float! }
type Query { products: [Product!]! }
${extra}`;
const changes = (after: string, before: string | undefined = catalog()) => takeoverChanges('catalog', before, after, OTHERS);

describe('takeoverChanges', () => {
  it('@override(from:) on a field: FIELD_OVERRIDE_ADDED naming the service it takes the field from', () => {
    const after = catalog(`type User @key(fields: "id") { id: ID! email: String! @federation__override(from: "content") }`);
    expect(changes(after)).toEqual([
      {
        type: 'FIELD_OVERRIDE_ADDED',
        path: 'User.email',
        message: 'catalog takes over User.email from content (@override)',
        breaking: true,
      },
      {
        type: 'ENTITY_EXTENDED_ADDED',
        path: 'User',
        message: 'catalog now contributes fields to the User entity of content and payments (@key)',
        breaking: true,
      },
    ]);
  });

  it('both spellings of a directive, an imported rename, and a progressive override’s label', () => {
    const imported = catalog(`type Product @key(fields: "id") { name: String! @override(from: "content") }`, '"@key", "@override"');
    const prefixed = catalog(`type Product @key(fields: "id") { name: String! @federation__override(from: "content") }`);
    const renamed = catalog(
      `type Product @key(fields: "id") { name: String! @takeover(from: "content", label: "percent(5)") }`,
      '"@key", { name: "@override", as: "@takeover" }',
    );
    const paths = (sdl: string) => changes(sdl).map((c) => [c.type, c.path]);
    expect(paths(imported)).toEqual([['FIELD_OVERRIDE_ADDED', 'Product.name']]);
    expect(paths(prefixed)).toEqual([['FIELD_OVERRIDE_ADDED', 'Product.name']]);
    expect(changes(renamed)[0]!.message).toBe('catalog takes over Product.name from content (@override, label "percent(5)")');
  });

  it('@requires naming another service’s field, nested selections included: REQUIRES_FOREIGN_FIELD_ADDED at that field', () => {
    const after = catalog(
      `type User @key(fields: "id") {
        id: ID!
        email: String! @external
        address: Address @external
        mailDomain: String @requires(fields: "email")
        shipping: String @federation__requires(fields: "email address { city }")
      }
      type Address { city: String! @external }`,
      '"@key", "@external", "@requires"',
    );
    const found = changes(after).filter((c) => c.type === 'REQUIRES_FOREIGN_FIELD_ADDED');
    expect(found).toEqual([
      {
        type: 'REQUIRES_FOREIGN_FIELD_ADDED',
        path: 'User.email',
        message: "catalog reads content's User.email (@requires on User.mailDomain, User.shipping)",
        breaking: true,
      },
      {
        type: 'REQUIRES_FOREIGN_FIELD_ADDED',
        path: 'User.address',
        message: "catalog reads content's User.address (@requires on User.shipping)",
        breaking: true,
      },
      {
        type: 'REQUIRES_FOREIGN_FIELD_ADDED',
        path: 'Address.city',
        message: "catalog reads content's Address.city (@requires on User.shipping)",
        breaking: true,
      },
    ]);
  });

  it('@provides on a field: PROVIDES_FOREIGN_FIELD_ADDED at each field of the returned type another service defines', () => {
    const after = catalog(
      `type User @key(fields: "id", resolvable: false) { id: ID! name: String! @external }
      type Review { id: ID! by: [User!]! @federation__provides(fields: "name") }
      extend type Query { reviews: [Review!]! }`,
      '"@key", "@external"',
    );
    expect(changes(after)).toEqual([
      {
        type: 'PROVIDES_FOREIGN_FIELD_ADDED',
        path: 'User.name',
        message: "catalog resolves content's User.name itself (@provides on Review.by)",
        breaking: true,
      },
    ]);
  });

  it('a @key type others define, newly given fields: ENTITY_EXTENDED_ADDED naming whoever resolves it (a stub does not)', () => {
    const after = catalog(`type Order @key(fields: "id") { id: ID! product: Product! }`);
    expect(changes(after)).toEqual([
      {
        type: 'ENTITY_EXTENDED_ADDED',
        path: 'Order',
        message: "catalog now contributes fields to payments' Order entity (@key)",
        breaking: true,
      },
    ]);
    // Referring to an entity by its key only (a stub) contributes nothing.
    expect(changes(catalog(`type Order @key(fields: "id", resolvable: false) { id: ID! }`))).toEqual([]);
  });

  it('nothing when the directive was already in before: a republish, or another change beside it', () => {
    const taking = catalog(`
      type User @key(fields: "id") {
        id: ID!
        email: String! @external
        avatar: String @federation__override(from: "content")
        mailDomain: String @federation__requires(fields: "email")
      }`);
    expect(changes(taking).length).toBeGreaterThan(0);
    expect(changes(taking, taking)).toEqual([]);
    expect(changes(`${taking}\ntype Extra { x: Int }`, taking)).toEqual([]);
    // A second reader of the same field is new, though.
    const more = taking.replace('mailDomain: String', 'other: Int @federation__requires(fields: "email")\n  mailDomain: String');
    expect(changes(more, taking).map((c) => [c.type, c.path, c.message])).toEqual([
      ['REQUIRES_FOREIGN_FIELD_ADDED', 'User.email', "catalog reads content's User.email (@requires on User.other)"],
    ]);
  });

  it('nothing for a service’s own fields: its own types, a field it resolves itself, a first publish of its own', () => {
    const own = catalog(`type Product @key(fields: "id") {
      label: String @federation__requires(fields: "name price")
      related: [Product!]! @federation__provides(fields: "name")
    }`);
    expect(changes(own)).toEqual([]);
    expect(takeoverChanges('catalog', undefined, own, OTHERS)).toEqual([]);
    // content's own SDL republished with more of its own User.
    expect(takeoverChanges('content', content, `${content}\nextend type User { avatar: String }`, OTHERS)).toEqual([]);
  });

  it('an @override from itself, and an SDL of another service that does not parse, are no takeover', () => {
    const after = catalog(`type Product @key(fields: "id") { name: String! @federation__override(from: "catalog") }`);
    expect(takeoverChanges('catalog', catalog(), after, [...OTHERS, { service: 'broken', sdl: 'type {' }])).toEqual([]);
  });

  it('isTakeoverChange tells its changes from the others', () => {
    expect(isTakeoverChange({ type: 'ENTITY_EXTENDED_ADDED' })).toBe(true);
    expect(isTakeoverChange({ type: 'FIELD_REMOVED' })).toBe(false);
  });
});
