import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, getOperationAST, parse, type DocumentNode } from 'graphql';
import pino from 'pino';
import { ServiceIdentity } from '@halo/kit';
import { clientNameOf, coordinatesOf, operationUsage, UsageRecorder } from '../src/usage';
import { batches, createUsageSender } from '../src/usage/reporter';

const schema = buildSchema(`
  type Query { products(first: Int, filter: ProductFilter): [Product!]! node(id: ID!): Node me: User }
  interface Node { id: ID! }
  type Product implements Node { id: ID! name: String! price(currency: Currency = EUR): Float owner: User }
  type User implements Node { id: ID! name: String! }
  input ProductFilter { name: String minPrice: Float }
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

  it('merges documents with the same signature into one report', () => {
    const recorder = new UsageRecorder(100);
    const one = parse('query A { products(first: 1) { id } }');
    const two = parse('query A { products(first: 2) { id } }');
    recorder.record(schema, one, op(one), 'web');
    recorder.record(schema, two, op(two), 'web');
    expect(recorder.drain()).toEqual([expect.objectContaining({ count: 2 })]);
  });

  it('holds at most the bound of (operation, client) pairs and counts the rest as dropped', () => {
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
