import { validateRestInput, type RestRoute } from '@halo/kit/rest';
import { messageOf } from '@halo/kit/testing';
import type { MoneyField } from '../src/domain/model';
import { listQuery, newProductFields, productChanges } from '../src/domain/rules';
import { restManifest } from '../src/rest/manifest';

/**
 * The manifest's schemas validate REST requests before the domain sees them, so for every input
 * they must answer exactly what the domain would: the same 400 message, or none. Any drift
 * between the two (a new rule, a reworded message) fails here.
 */

const route = (id: string) => restManifest.routes.find((r) => r.id === id)! as RestRoute;

const long = (n: number) => 'x'.repeat(n);

const BODIES = (money: MoneyField): unknown[] => [
  undefined,
  null,
  'text',
  42,
  [],
  ['name'],
  {},
  { name: 'Book' },
  { name: 'Book', category: 'books' },
  { name: 'Book', category: 'books', [money]: 10 },
  { name: 'Book', category: 'books', [money]: 19.99 },
  { name: 'Book', category: 'books', [money]: 19.999 },
  { name: 'Book', category: 'books', [money]: 0.1 + 0.2 },
  { name: 'Book', category: 'books', [money]: -1 },
  { name: 'Book', category: 'books', [money]: '10' },
  { name: 'Book', category: 'books', [money]: '' },
  { name: 'Book', category: 'books', [money]: null },
  { name: 'Book', category: 'books', [money]: 1e15 },
  { name: 'Book', category: 'books', [money]: 9_999_999_999.99 },
  { name: 'Book', category: 'books', [money]: 999_999_999_999 },
  { name: 'Book', category: 'books', [money]: 1_000_000_000_000 },
  { name: 'Book', category: 'books', [money]: Number.MAX_SAFE_INTEGER + 2 },
  { name: 'Book', category: 'books', [money]: true },
  { name: '   ', category: 'books', [money]: 1 },
  { name: 5, category: 'books', [money]: 1 },
  { name: null, category: 'books', [money]: 1 },
  { name: long(200), category: 'books', [money]: 1 },
  { name: long(201), category: 'books', [money]: 1 },
  { name: ` ${long(200)} `, category: 'books', [money]: 1 },
  { name: 'Book', category: long(51), [money]: 1 },
  { name: 'Book', category: '', [money]: 1 },
  { name: 'Book', description: 5, category: 'books', [money]: 1 },
  { name: 'Book', description: null, category: 'books', [money]: 1 },
  { name: 'Book', description: long(5001), category: 'books', [money]: 1 },
  { name: 'Book', description: ` ${long(5000)} `, category: 'books', [money]: 1 },
  { name: 'Book', description: '', category: 'books', [money]: 1 },
  { name: '', description: 5, category: '', [money]: 'x' },
  { description: 'only a description' },
  { category: null },
  { id: 3, created_at: 'x' },
  { name: 'Book', category: 'books', price: 1, price_cents: 100 },
];

describe.each([
  [1, 'price'],
  [2, 'price_cents'],
] as const)('version %d (%s): the manifest answers what the domain answers', (version, money) => {
  it.each(BODIES(money).map((b) => [JSON.stringify(b) ?? 'undefined', b]))('POST /products %s', (_label, body) => {
    const rest = messageOf(() => validateRestInput(route('createProduct'), version, { body }));
    expect(rest).toBe(messageOf(() => newProductFields(body, money)));
  });

  it.each(BODIES(money).map((b) => [JSON.stringify(b) ?? 'undefined', b]))('PUT /products/1 %s', (_label, body) => {
    const rest = messageOf(() => validateRestInput(route('updateProduct'), version, { params: { id: '1' }, body }));
    expect(rest).toBe(messageOf(() => productChanges(body, money)));
  });
});

it.each([
  {},
  { page: '2', limit: '5' },
  { page: 'abc', limit: '-1' },
  { page: ['1', '2'] },
  { sort: 'price', order: 'desc', category: 'books' },
  { sort: '' },
  { sort: 'PRICE' },
  { sort: ['price', 'name'] },
  { order: 'up' },
  { order: '' },
  { category: '' },
  { category: ['a', 'b'] },
  { category: ['a', 'b'], sort: 'nope' },
  { category: ['a', 'b'], order: 'nope' },
  { sort: 'nope', order: 'nope' },
])('GET /products?%j: the same answer as the domain', (query) => {
  for (const version of [1, 2]) {
    expect(messageOf(() => validateRestInput(route('listProducts'), version, { query }))).toBe(messageOf(() => listQuery(query)));
  }
});

it.each(['1', '0', '007', 'abc', '-1', '1.5', '1e3', '', '1234567890123456'])('/products/%s: ids as the kit parses them', (id) => {
  for (const r of ['getProduct', 'updateProduct', 'deleteProduct']) {
    const rest = messageOf(() => validateRestInput(route(r), 1, { params: { id }, body: { name: 'x' } }));
    expect({ r, id, rest }).toEqual({ r, id, rest: /^\d{1,15}$/.test(id) ? null : 'Invalid id' });
  }
});
