import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, getOperationAST, parse, type DocumentNode } from 'graphql';
import pino from 'pino';
import { ServiceIdentity } from '@halo/kit/auth';
import { clientNameOf, clientVersionOf, coordinatesOf, operationUsage, UsageRecorder } from '../src/usage';
import { clientCache } from '../src/usage/clients';
import { batches, createUsageSender } from '../src/usage/reporter';

const schema = buildSchema(`
  type Query { products(first: Int, filter: ProductFilter): [Product!]! node(id: ID!): Node me: User }
  interface Node { id: ID! }
  type Product implements Node { id: ID! name: String! price(currency: Currency = EUR): Float owner: User listedIn: Currency }
  type User implements Node { id: ID! name: String! }
  input ProductFilter { name: String minPrice: Float currencies: [Currency!] }
  enum Currency { EUR USD }
`);

const op = (document: DocumentNode, name?: string) => getOperationAST(document, name)!;
const usageOf = (text: string, name?: string) => {
  const document = parse(text);
  return operationUsage(schema, document, op(document, name));
};

describe('schema coordinates of an operation', () => {
  it('lists fields, arguments, input fields and types, through fragments, without introspection', () => {
    const document = parse(`
      query Shop($f: ProductFilter, $c: Currency) {
        __typename
        products(first: 2, filter: { name: "x" }) { ...P owner { ... on User { name } } }
        node(id: "1") { id ... on Product { price(currency: $c) @include(if: true) } }
      }
      fragment P on Product { ...Q name }
      fragment Q on Product { id }
      fragment Unused on User { id }
    `);
    expect(coordinatesOf(schema, document, op(document))).toEqual(
      [
        'Currency',
        'Float',
        'ID',
        'Int',
        'Node',
        'Node.id',
        'Product',
        'Product.id',
        'Product.name',
        'Product.owner',
        'Product.price',
        'Product.price.currency',
        'ProductFilter',
        'ProductFilter.name',
        'Query',
        'Query.node',
        'Query.node.id',
        'Query.products',
        'Query.products.filter',
        'Query.products.first',
        'String',
        'User',
        'User.name',
      ].sort(),
    );
  });

  it('lists the enum values an operation writes, and every value of an enum a selected field returns', () => {
    const written = usageOf('{ products(filter: { currencies: [USD] }) { price(currency: USD) } }').coordinates;
    expect(written).toEqual(expect.arrayContaining(['Currency.USD', 'ProductFilter.currencies']));
    expect(written).not.toContain('Currency.EUR');
    // A client reading `listedIn` may receive any Currency: removing one breaks it.
    expect(usageOf('{ products { listedIn } }').coordinates).toEqual(expect.arrayContaining(['Currency.EUR', 'Currency.USD']));
  });

  it('gives one signature and hash to the same operation with other literals, aliases and layout', () => {
    const a = usageOf('query P { products(first: 2) { name id } }');
    const b = usageOf('query P {\n  list: products(first: 50) {\n    id\n    name\n  }\n}');
    expect(a.hash).toBe(b.hash);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(a.body).not.toContain('50');
    expect(a.name).toBe('P');
    expect(usageOf('{ products { id } }').name).toBe('');
  });

  it('reads only the operation that ran when the document holds several', () => {
    const text = 'query A { me { name } } query B { products { id } }';
    const b = usageOf(text, 'B');
    expect(b.coordinates).toContain('Query.products');
    expect(b.coordinates).not.toContain('Query.me');
    expect(b.body).not.toContain('me');
  });
});

describe('client names', () => {
  it('prefers apollographql-client-name, then x-client-name, then unknown; sanitized and bounded', () => {
    expect(clientNameOf('web', 'ios')).toBe('web');
    expect(clientNameOf(undefined, 'ios-app/2.1')).toBe('ios-app/2.1');
    expect(clientNameOf('', undefined)).toBe('unknown');
    expect(clientNameOf('<script>alert(1)</script>', undefined)).toBe('scriptalert1/script');
    expect(clientNameOf('ü ö', undefined)).toBe('unknown');
    expect(clientNameOf('x'.repeat(200), undefined)).toHaveLength(64);
    // An npm package's scope is kept (the SDK's own name).
    expect(clientNameOf('@halo/client', undefined)).toBe('@halo/client');
  });
});

describe('client versions', () => {
  it('prefers apollographql-client-version, then x-client-version; semver as sent', () => {
    expect(clientVersionOf('2.3.1', '9')).toBe('2.3.1');
    expect(clientVersionOf(undefined, '1.0.0-rc.1+build.7')).toBe('1.0.0-rc.1+build.7');
    expect(clientVersionOf(' 2.3.1 ', undefined)).toBe('2.3.1');
    expect(clientVersionOf('v2024_05', undefined)).toBe('v2024_05');
    expect(clientVersionOf('1'.repeat(64), undefined)).toHaveLength(64);
  });

  it('drops a hostile or absent one whole (no version), never cutting or cleaning it', () => {
    for (const hostile of [
      '1'.repeat(65),
      '2.3.1\u0000',
      '\u001b[31m2.3.1',
      '2.3.1\r\nx-evil: 1',
      '2.3.1\tbeta',
      '2.3.1 beta',
      '<script>',
      '2.3/1',
      'ü',
    ]) {
      expect(clientVersionOf(hostile, undefined)).toBe('');
    }
    expect(clientVersionOf(undefined, undefined)).toBe('');
    expect(clientVersionOf('', '')).toBe('');
    expect(clientVersionOf('   ', undefined)).toBe('');
  });

  it('remembers a request’s client by what it sent: the same object for the same headers', () => {
    const clientOf = clientCache();
    const a = clientOf('ios-app', undefined, '2.3.1', undefined);
    expect(a).toEqual({ name: 'ios-app', version: '2.3.1' });
    expect(clientOf('ios-app', undefined, '2.3.1', undefined)).toBe(a);
    expect(clientOf('ios-app', undefined, '2.3.0', undefined)).toEqual({ name: 'ios-app', version: '2.3.0' });
    expect(clientOf('ios-app', undefined, 'x'.repeat(65), undefined)).toEqual({ name: 'ios-app', version: '' });
    expect(clientOf(undefined, undefined, undefined, undefined)).toEqual({ name: 'unknown', version: '' });
    // Bounded: many distinct spellings start it over, answers unchanged.
    for (let i = 0; i < 1_200; i++) expect(clientOf(`c${i}`, undefined, `${i}.0`, undefined)).toEqual({ name: `c${i}`, version: `${i}.0` });
    expect(clientOf('ios-app', undefined, '2.3.1', undefined)).toEqual(a);
  });
});

describe('UsageRecorder', () => {
  const documentA = parse('query A { products { id name } }');
  const documentB = parse('query B { me { name } }');
  const hourOf = (ms: number) => new Date(ms - (ms % 3_600_000)).toISOString();

  it('counts per operation, client and hour, and analyses each operation once, after the request', async () => {
    const recorder = new UsageRecorder(100);
    const t = Date.UTC(2025, 0, 1, 10, 59, 59);
    recorder.record(schema, documentA, op(documentA), 'web', t);
    recorder.record(schema, documentA, op(documentA), 'web', t);
    recorder.record(schema, documentA, op(documentA), 'ios', t);
    recorder.record(schema, documentA, op(documentA), 'web', t + 2_000);
    recorder.record(schema, documentB, op(documentB), 'web', t + 2_000);
    expect(recorder.size).toBe(4);
    const reports = recorder.drain();
    const hash = operationUsage(schema, documentA, op(documentA)).hash;
    expect(reports).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ hour: hourOf(t), client: 'web', count: 2, operation: expect.objectContaining({ hash, name: 'A' }) }),
        expect.objectContaining({ hour: hourOf(t), client: 'ios', count: 1 }),
        expect.objectContaining({ hour: hourOf(t + 2_000), client: 'web', count: 1, operation: expect.objectContaining({ hash }) }),
        expect.objectContaining({
          hour: hourOf(t + 2_000),
          client: 'web',
          count: 1,
          coordinates: expect.arrayContaining(['Query.me', 'User.name']),
        }),
      ]),
    );
    expect(reports).toHaveLength(4);
    expect(recorder.size).toBe(0);
    expect(recorder.drain()).toEqual([]);
  });

  it('adds the enum values each request sent in variables, as the executor read them (lists and input objects too)', () => {
    const recorder = new UsageRecorder(100);
    const document = parse('query Q($c: Currency, $f: ProductFilter) { products(filter: $f) { price(currency: $c) } }');
    const t = Date.UTC(2025, 0, 1, 10);
    recorder.record(schema, document, op(document), 'web', t, { c: 'USD' });
    recorder.record(schema, document, op(document), 'web', t, { f: { currencies: ['EUR'], name: 'USD' } });
    recorder.record(schema, document, op(document), 'web', t, { c: 'NOT_A_VALUE' });
    const [report] = recorder.drain();
    expect(report!.count).toBe(3);
    expect(report!.coordinates).toEqual(expect.arrayContaining(['Currency.USD', 'Currency.EUR']));
    expect(report!.coordinates).not.toContain('Currency.NOT_A_VALUE');
    // Without variables nothing is added, and an operation with no enum variable reads none.
    const plain = new UsageRecorder(100);
    plain.record(schema, document, op(document), 'web', t);
    expect(plain.drain()[0]!.coordinates.filter((c) => c.startsWith('Currency.'))).toEqual([]);
  });

  it('counts each version of a client apart; a name alone, or no version, is an unknown version (no clientVersion)', () => {
    const recorder = new UsageRecorder(100);
    const t = Date.UTC(2025, 0, 1, 10);
    recorder.record(schema, documentA, op(documentA), { name: 'ios-app', version: '2.3.1' }, t);
    recorder.record(schema, documentA, op(documentA), { name: 'ios-app', version: '2.3.1' }, t);
    recorder.record(schema, documentA, op(documentA), { name: 'ios-app', version: '2.3.0' }, t);
    recorder.record(schema, documentA, op(documentA), { name: 'ios-app', version: '' }, t);
    recorder.record(schema, documentA, op(documentA), 'ios-app', t);
    expect(recorder.size).toBe(3);
    const reports = recorder.drain();
    expect(reports.map((r) => [r.client, r.clientVersion, r.count])).toEqual([
      ['ios-app', '2.3.1', 2],
      ['ios-app', '2.3.0', 1],
      ['ios-app', undefined, 2],
    ]);
    expect(reports[2]).not.toHaveProperty('clientVersion');
  });

  it('merges documents with the same signature into one report', () => {
    const recorder = new UsageRecorder(100);
    const one = parse('query A { products(first: 1) { id } }');
    const two = parse('query A { products(first: 2) { id } }');
    recorder.record(schema, one, op(one), 'web');
    recorder.record(schema, two, op(two), 'web');
    expect(recorder.drain()).toEqual([expect.objectContaining({ count: 2 })]);
  });

  it('sums the estimated cost of the requests that had one, per report, as their signature merges them', () => {
    const recorder = new UsageRecorder(100);
    const one = parse('query A { products(first: 1) { id } }');
    const many = parse('query A { products(first: 20) { id } }');
    const t = Date.UTC(2025, 0, 1, 10);
    recorder.record(schema, one, op(one), 'web', t, undefined, 2);
    recorder.record(schema, many, op(many), 'web', t, undefined, 21);
    recorder.record(schema, one, op(one), 'web', t); // no cost known: counted, not costed
    recorder.record(schema, one, op(one), 'ios', t, undefined, 0); // free (an introspection, say) is a cost too
    expect(recorder.drain().map((r) => [r.client, r.count, r.cost])).toEqual([
      ['web', 3, { sum: 23, requests: 2 }],
      ['ios', 1, { sum: 0, requests: 1 }],
    ]);
  });

  it('holds at most the bound of (operation, client, version) triples and counts the rest as dropped', () => {
    const recorder = new UsageRecorder(2);
    recorder.record(schema, documentA, op(documentA), 'a');
    recorder.record(schema, documentA, op(documentA), 'b');
    recorder.record(schema, documentA, op(documentA), 'c');
    recorder.record(schema, documentB, op(documentB), 'a');
    // Known pairs keep counting.
    recorder.record(schema, documentA, op(documentA), 'a');
    expect(recorder.dropped).toBe(2);
    expect(recorder.drain().map((r) => [r.client, r.count])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    recorder.record(schema, documentB, op(documentB), 'a');
    expect(recorder.drain()).toHaveLength(1);
    // A new version of a known client is a new triple.
    recorder.record(schema, documentA, op(documentA), { name: 'a', version: '1' });
    recorder.record(schema, documentA, op(documentA), { name: 'a', version: '2' });
    recorder.record(schema, documentA, op(documentA), { name: 'a', version: '3' });
    expect(recorder.dropped).toBe(3);
    expect(recorder.drain().map((r) => r.clientVersion)).toEqual(['1', '2']);
  });

  it('analyses off the request path: once per operation, after the request, never per request', async () => {
    const analyse = jest.fn(operationUsage);
    const recorder = new UsageRecorder(100, analyse);
    const document = parse('query C { products { id } }');
    const operation = op(document);
    {
      const started = process.hrtime.bigint();
      for (let i = 0; i < 10_000; i++) recorder.record(schema, document, operation, 'web');
      const perRecordNs = Number(process.hrtime.bigint() - started) / 10_000;
      expect(analyse).not.toHaveBeenCalled();
      await new Promise((resolve) => setImmediate(resolve));
      expect(analyse).toHaveBeenCalledTimes(1);
      recorder.record(schema, document, operation, 'web');
      expect(recorder.drain()).toEqual([expect.objectContaining({ count: 10_001 })]);
      expect(analyse).toHaveBeenCalledTimes(1);
      // Generous (a shared machine, cold code): Map operations, far from a parse and a visit.
      expect(perRecordNs).toBeLessThan(20_000);
    }
  });
});

describe('usage batches', () => {
  it('stays under the byte bound per body', () => {
    const report = { hour: 'h', client: 'c', operation: { hash: 'x', name: 'n', body: 'b'.repeat(100) }, coordinates: [], count: 1 };
    const split = batches(
      Array.from({ length: 50 }, () => ({ ...report })),
      1_000,
    );
    expect(split.length).toBeGreaterThan(5);
    for (const batch of split) expect(JSON.stringify(batch).length).toBeLessThanOrEqual(1_000 + batch.length);
    expect(split.flat()).toHaveLength(50);
  });
});

describe('usage sender', () => {
  const logger = pino({ level: 'silent' });
  const identity = new ServiceIdentity('gateway', {});
  let server: Server;
  let url: string;
  let answer = 500;
  const bodies: { gateway: { id: string; composition: string }; reports: { count: number }[] }[] = [];

  beforeAll(async () => {
    // A plain HTTP listener standing in for the network, to drive the retry rule; the real
    // registry is in e2e/registry-gateway.test.ts.
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(text));
        res.statusCode = answer;
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('retries a failed batch once with the next flush, then drops it and counts it', async () => {
    const recorder = new UsageRecorder(100);
    const sender = createUsageSender(recorder, { url, identity, gatewayId: 'gw-1', served: () => 7, maxReports: 100, logger });
    const document = parse('query A { products { id } }');
    recorder.record(schema, document, op(document), 'web');
    answer = 500;
    await sender.flush();
    expect(sender.stats()).toEqual({ sent: 0, retried: 1, dropped: 0 });
    recorder.record(schema, document, op(document), 'ios');
    await sender.flush();
    // Both sent together and failed: the retried one is dropped, the new one waits for its retry.
    expect(bodies.at(-1)!.reports).toHaveLength(2);
    expect(sender.stats()).toEqual({ sent: 0, retried: 2, dropped: 1 });
    answer = 202;
    await sender.flush();
    expect(sender.stats()).toEqual({ sent: 1, retried: 2, dropped: 1 });
    expect(bodies.at(-1)!.gateway).toEqual({ id: 'gw-1', composition: 7 });
    await sender.flush();
    expect(bodies).toHaveLength(3);
  });

  it('fails open when the registry is unreachable', async () => {
    const recorder = new UsageRecorder(100);
    const sender = createUsageSender(recorder, {
      url: 'http://127.0.0.1:1',
      identity,
      gatewayId: 'gw',
      served: () => 1,
      maxReports: 100,
      logger,
    });
    const document = parse('query A { products { id } }');
    recorder.record(schema, document, op(document), 'web');
    await expect(sender.flush()).resolves.toBeUndefined();
    expect(sender.stats().retried).toBe(1);
  });
});
