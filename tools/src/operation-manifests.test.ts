import { ManifestError, operationName, parseManifest, parseManifestText } from './operation-manifests';

const products = 'query TopProducts { products(limit: 3) { id name } }';
const me = 'query Me { me { id } }';
const anonymous = '{ products(limit: 1) { id } }';

describe('Apollo persisted query manifest', () => {
  const manifest = (operations: unknown[]) => ({ format: 'apollo-persisted-query-manifest', version: 1, operations });

  it('reads id, body and the entry’s name', () => {
    expect(
      parseManifest(
        manifest([
          { id: 'a1', name: 'TopProducts', type: 'query', body: products },
          { id: 'b2', name: 'Renamed', type: 'query', body: me },
        ]),
      ),
    ).toEqual([
      { id: 'a1', body: products, name: 'TopProducts' },
      { id: 'b2', body: me, name: 'Renamed' },
    ]);
  });

  it('an entry without a name takes the document’s', () => {
    expect(parseManifest(manifest([{ id: 'a1', type: 'query', body: products }]))).toEqual([
      { id: 'a1', body: products, name: 'TopProducts' },
    ]);
  });

  it('refuses no operation, an entry with no id, a non-string body, a duplicate id, another version', () => {
    expect(() => parseManifest(manifest([]))).toThrow(new ManifestError('the manifest holds no operation'));
    expect(() => parseManifest(manifest([{ name: 'X', body: products }]))).toThrow(new ManifestError('operation 1 has no id'));
    expect(() =>
      parseManifest(
        manifest([
          { id: 'a1', body: products },
          { id: '', body: me },
        ]),
      ),
    ).toThrow(new ManifestError('operation 2 has no id'));
    expect(() => parseManifest(manifest([{ id: 'a1', body: { query: products } }]))).toThrow(
      new ManifestError('operation a1: its body is not a string'),
    );
    expect(() =>
      parseManifest(
        manifest([
          { id: 'a1', body: products },
          { id: 'a1', body: me },
        ]),
      ),
    ).toThrow(new ManifestError('operation a1 appears twice'));
    expect(() => parseManifest(manifest(['a1']))).toThrow(new ManifestError('operation 1 is not an object'));
    expect(() => parseManifest({ format: 'apollo-persisted-query-manifest', version: 2, operations: [] })).toThrow(/only version 1/);
    expect(() => parseManifest({ format: 'apollo-persisted-query-manifest', version: 1 })).toThrow(/without an "operations" list/);
  });
});

describe('the map form (id → document text)', () => {
  it("Relay's persisted_queries.json: names from the documents", () => {
    const relay = { '3f1e5c0a9b': products, '8a7d6c5b4e': me };
    expect(parseManifest(relay)).toEqual([
      { id: '3f1e5c0a9b', body: products, name: 'TopProducts' },
      { id: '8a7d6c5b4e', body: me, name: 'Me' },
    ]);
  });

  it("GraphQL Code Generator's persisted-documents.json (sha256 keys): an anonymous operation's name is ''", () => {
    const codegen = {
      sha256_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0: anonymous,
      b1946ac92492d2347c6235b4d2611184a3b3f0e1d2c3b4a5968778695a4b3c2d: `fragment P on Product { id }\n${products}`,
    };
    expect(parseManifest(codegen).map((o) => o.name)).toEqual(['', 'TopProducts']);
  });

  it('refuses an empty map, an entry with no id, a non-string body', () => {
    expect(() => parseManifest({})).toThrow(new ManifestError('the manifest holds no operation'));
    expect(() => parseManifest({ '': products })).toThrow(new ManifestError('operation 1 has no id'));
    expect(() => parseManifest({ a1: products, b2: 42 })).toThrow(new ManifestError('operation b2: its body is not a string'));
  });
});

it('a file that is none of the formats names them', () => {
  for (const other of [[], [products], 'query', null, { format: 'something-else', operations: [] }, { a: 1, b: { query: 'x' } }]) {
    expect(() => parseManifest(other)).toThrow(
      /^not an operation manifest: expected one of Apollo's persisted query manifest .*, Relay's persisted_queries\.json, GraphQL Code Generator's persisted-documents\.json$/,
    );
  }
  expect(() => parseManifestText('{ nope')).toThrow(/^not JSON: /);
  expect(parseManifestText(JSON.stringify({ x: me }))).toEqual([{ id: 'x', body: me, name: 'Me' }]);
});

it("operationName: the first operation's name; '' when anonymous or not GraphQL (the registry says why)", () => {
  expect(operationName(`fragment F on Product { id }\nquery Named { products { ...F } }`)).toBe('Named');
  expect(operationName('mutation { logout }')).toBe('');
  expect(operationName('query {')).toBe('');
});
