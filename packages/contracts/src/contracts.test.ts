import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSchema, parse } from 'graphql';
import { checkoutContracts } from '../../../tools/src/checkout-contracts';
import { loadManifests, manifestSource } from '../../../tools/src/compose-rest';
import { breakingChanges, restChanges, schemaChanges } from './changes';
import { composeContracts, jsonFile } from './compose';
import { canonicalJson, contractHash, parseContract, type Contract } from './contract';
import { operationCoordinates, usageOf, usesPath } from './usage';

const ROOT = resolve(__dirname, '../../..');
const committed = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');
const contracts = checkoutContracts({ manifests: () => loadManifests(manifestSource) });
const byName = (name: string) => contracts.find((c) => c.service === name)!;
const withCatalog = (sdl: string): Contract[] => contracts.map((c) => (c.service === 'catalog' ? { ...c, sdl } : c));

describe('composeContracts', () => {
  it('composes the checkout byte for byte into the committed supergraph, route table and OpenAPI document', () => {
    const result = composeContracts(contracts);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.composition.supergraph).toBe(committed('gateway/supergraph.graphql'));
    expect(jsonFile(result.composition.routes)).toBe(committed('gateway/routes.json'));
    expect(jsonFile(result.composition.openapi)).toBe(committed('gateway/openapi.json'));
  });

  it('does not depend on the order the contracts come in, nor on a JSON round trip', () => {
    const shuffled = JSON.parse(JSON.stringify([...contracts].reverse())) as Contract[];
    const a = composeContracts(contracts);
    const b = composeContracts(shuffled);
    expect(b).toEqual(a);
  });

  it('refuses a subgraph that does not compose, naming the clash', () => {
    const result = composeContracts(withCatalog(`${byName('catalog').sdl}\nextend type Query { user(id: ID!): Int }`));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.composition.join('\n')).toMatch(/user/);
  });

  it('refuses a schema that does not parse, naming the service, line and column', () => {
    const result = composeContracts(withCatalog('type Query {\n  products: [String\n}\n'));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors.composition).toEqual([expect.stringMatching(/^catalog: Syntax Error: .+ \(schema line 3, column 1\)$/)]);
    }
  });

  it('refuses one method and path declared by two services, naming both', () => {
    const catalog = byName('catalog');
    const stolen = { ...catalog.rest!.routes[0]!, service: 'content' as const };
    const content = byName('content');
    const result = composeContracts(
      contracts.map((c) =>
        c.service === 'content' ? { ...content, rest: { ...content.rest!, routes: [...content.rest!.routes, stolen] } } : c,
      ),
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.rest).toEqual([`${stolen.method} ${stolen.path} is declared by content and by catalog`]);
  });

  it('refuses an operationId used twice', () => {
    const content = byName('content');
    const [path, ops] = Object.entries(byName('catalog').rest!.openapi.paths)[0]!;
    const copied = {
      ...content,
      rest: { ...content.rest!, openapi: { ...content.rest!.openapi, paths: { ...content.rest!.openapi.paths, [`/copy${path}`]: ops } } },
    };
    const result = composeContracts(contracts.map((c) => (c.service === 'content' ? copied : c)));
    expect(!result.ok && result.errors.rest[0]).toMatch(/operationId \w+ is used by catalog and by content/);
  });
});

describe('contract', () => {
  it('hashes the canonical JSON of {sdl, url, rest}: key order does not matter, content does', () => {
    const c = byName('catalog');
    const reordered = JSON.parse(canonicalJson(c)) as Contract;
    expect(contractHash(reordered)).toBe(contractHash(c));
    expect(contractHash({ ...c, sdl: `${c.sdl}\n# x` })).not.toBe(contractHash(c));
    expect(contractHash({ ...c, url: 'http://catalog:4003' })).not.toBe(contractHash(c));
    expect(contractHash(c)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('parses a published contract and names the first bad field', () => {
    const c = JSON.parse(JSON.stringify(byName('catalog'))) as Contract;
    expect(parseContract(c)).toEqual({ contract: c });
    expect(parseContract({ ...c, service: 'nope' })).toEqual({ error: expect.stringMatching(/^contract\.service: /) });
    expect(parseContract({ ...c, url: 'ftp://x' })).toEqual({ error: 'contract.url: url must be an http(s) URL' });
    expect(parseContract({ ...c, extra: 1 })).toEqual({ error: expect.stringMatching(/^contract\.\(root\)|^contract\.extra/) });
    expect(parseContract({ ...c, service: 'content' })).toEqual({ error: expect.stringContaining('names service catalog, not content') });
  });
});

describe('breaking changes and usage', () => {
  const before = composeContracts(contracts);
  const sdlOf = (r: ReturnType<typeof composeContracts>) => (r.ok ? r.composition.supergraph : '');

  it('an added field is a change, not a breaking one; a removed one is breaking', async () => {
    const added = sdlOf(composeContracts(withCatalog(byName('catalog').sdl!.replace(/(type Product[^{]*\{)/, '$1\n  sku: String'))));
    expect(added).toContain('sku: String');
    expect((await schemaChanges(sdlOf(before), added)).map((c) => [c.path, c.breaking])).toEqual([['Product.sku', false]]);
    const removed = sdlOf(composeContracts(withCatalog(byName('catalog').sdl!.replace(/\n\s*description: String[^\n]*/, ''))));
    expect((await breakingChanges(sdlOf(before), removed)).map((c) => [c.type, c.path])).toEqual([
      ['FIELD_REMOVED', 'Product.description'],
    ]);
  });

  it('a registered operation’s coordinates: enum values and input fields written, enum variables’ every value', () => {
    const schema = buildSchema(`
      type Query { products(sort: Sort, filter: Filter): [Product] }
      type Product { id: ID! kind: Kind }
      enum Sort { PRICE NAME }
      enum Kind { BOOK GAME }
      enum Order { ASC DESC }
      input Filter { category: String order: Order }
    `);
    const literal = parse('{ products(sort: PRICE, filter: { category: "books" }) { id } }');
    expect(operationCoordinates(schema, literal)).toEqual(
      expect.arrayContaining(['Sort.PRICE', 'Filter.category', 'Query.products.filter']),
    );
    expect(operationCoordinates(schema, literal)).not.toContain('Sort.NAME');
    // What a selected field returns: any value of its enum may reach the client.
    expect(operationCoordinates(schema, parse('{ products { kind } }'))).toEqual(expect.arrayContaining(['Kind.BOOK', 'Kind.GAME']));
    // Sent in variables, not yet known: every value the variables' types can name counts.
    const variables = parse('query Q($s: Sort, $f: Filter) { products(sort: $s, filter: $f) { id } }');
    expect(operationCoordinates(schema, variables)).toEqual(expect.arrayContaining(['Sort.PRICE', 'Sort.NAME', 'Order.ASC', 'Order.DESC']));
  });

  it('an operation’s coordinates: types, fields through fragments, arguments', () => {
    const schema = buildSchema(
      'type Query { product(id: ID!): Product products(limit: Int): [Product] } type Product { id: ID! name: String price: Float }',
    );
    const doc = parse('query Q($id: ID!) { product(id: $id) { ...F } } fragment F on Product { name }');
    expect(operationCoordinates(schema, doc)).toEqual([
      'ID',
      'Product',
      'Product.name',
      'Query',
      'Query.product',
      'Query.product.id',
      'String',
    ]);
  });

  it('a change at P is used by an operation that recorded P or a coordinate under P.', () => {
    expect(usesPath(['Product.name'], 'Product.name')).toBe(true);
    expect(usesPath(['Query.products.limit'], 'Query.products')).toBe(true);
    expect(usesPath(['Product.name'], 'Product')).toBe(true);
    expect(usesPath(['Product.names'], 'Product.name')).toBe(false);
    expect(usesPath(['ProductPage.data'], 'Product')).toBe(false);
    expect(usesPath(['Product'], '')).toBe(false);
    const usage = [
      { name: 'A', hash: 'a', client: 'web', clientVersion: null, count: 3, lastSeen: 't', coordinates: ['Product.name'] },
      {
        name: 'B',
        hash: 'b',
        client: 'ios',
        clientVersion: '2.3.1',
        count: 10,
        lastSeen: 't',
        coordinates: ['Product.name', 'Product.price'],
      },
      {
        name: 'B',
        hash: 'b',
        client: 'ios',
        clientVersion: '2.3.0',
        count: 3,
        lastSeen: 't',
        coordinates: ['Product.name', 'Product.price'],
      },
      { name: 'C', hash: 'c', client: 'web', clientVersion: null, count: 99, lastSeen: 't', coordinates: ['Product.price'] },
    ];
    // Busiest first; at equal counts by name, client, then version.
    expect(usageOf('Product.name', usage)).toEqual({
      count: 16,
      operations: [
        { name: 'B', hash: 'b', client: 'ios', clientVersion: '2.3.1', count: 10, lastSeen: 't' },
        { name: 'A', hash: 'a', client: 'web', clientVersion: null, count: 3, lastSeen: 't' },
        { name: 'B', hash: 'b', client: 'ios', clientVersion: '2.3.0', count: 3, lastSeen: 't' },
      ],
    });
    expect(usageOf('Product.id', usage)).toEqual({ count: 0, operations: [] });
  });
});

describe('REST changes', () => {
  const table = composeContracts(contracts);
  const routes = table.ok ? table.composition.routes.routes : [];
  const products = routes.find((r) => r.method === 'GET' && r.path === '/products')!;
  const without = (drop: (r: (typeof routes)[number]) => boolean) => routes.filter((r) => !drop(r));

  it('the same table is no change', () => {
    expect(products.versions).toEqual([1, 2]);
    expect(restChanges(routes, routes)).toEqual([]);
  });

  it('a removed route, or one version of it, is breaking; an added one is not', () => {
    const gone = without((r) => r === products);
    expect(restChanges(routes, gone).map((c) => [c.type, c.path, c.breaking])).toEqual([
      ['REST_ROUTE_REMOVED', 'GET /products v1', true],
      ['REST_ROUTE_REMOVED', 'GET /products v2', true],
    ]);
    expect(restChanges(gone, routes).map((c) => [c.type, c.path, c.breaking])).toEqual([
      ['REST_ROUTE_ADDED', 'GET /products v1', false],
      ['REST_ROUTE_ADDED', 'GET /products v2', false],
    ]);
    const v2only = routes.map((r) => (r === products ? { ...r, versions: [2], deprecated: undefined } : r));
    expect(restChanges(routes, v2only).map((c) => [c.path, c.breaking])).toEqual([['GET /products v1', true]]);
  });

  it('a version removed once its announced sunset has passed is not breaking', () => {
    const sunset = products.deprecated?.['1']?.sunset;
    expect(sunset).toBeDefined();
    const v2only = routes.map((r) => (r === products ? { ...r, versions: [2], deprecated: undefined } : r));
    const after = new Date(Date.parse(sunset!) + 1000);
    expect(restChanges(routes, v2only, after)).toEqual([
      {
        type: 'REST_ROUTE_REMOVED',
        path: 'GET /products v1',
        message: `'GET /products v1' was removed after its sunset (${sunset})`,
        breaking: false,
      },
    ]);
  });

  it('requiring a token where none was needed is breaking; a route moving to another service is no change', () => {
    const open = routes.find((r) => !r.auth)!;
    const locked = routes.map((r) => (r === open ? { ...r, auth: true as const } : r));
    expect(restChanges(routes, locked).map((c) => [c.type, c.breaking])).toEqual(
      (open.versions ?? [1]).map(() => ['REST_ROUTE_AUTH_ADDED', true]),
    );
    const moved = routes.map((r) =>
      r === open ? { ...r, service: open.service === 'content' ? ('catalog' as const) : ('content' as const) } : r,
    );
    expect(restChanges(routes, moved)).toEqual([]);
  });
});
